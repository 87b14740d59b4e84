//! AG-UI events as `agui-verify` reads them (a JSON array, each element decoded on its own) and
//! as lines of JSON, through the whole consumer: decode, chunk expansion, rules, assembly.
use serde_json::value::RawValue;
use walkie_agui::{Consumer, Mode};

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let Ok(text) = std::str::from_utf8(data) else {
            return;
        };
        for mode in [Mode::Consumer, Mode::Strict] {
            let mut consumer = Consumer::new(mode);
            match serde_json::from_str::<Vec<&RawValue>>(text) {
                Ok(elements) => {
                    for element in elements {
                        if consumer.push_json(element.get()).is_err() {
                            break;
                        }
                    }
                }
                Err(_) => {
                    for line in text.lines() {
                        if consumer.push_json(line).is_err() {
                            break;
                        }
                    }
                }
            }
            let _ = consumer.report();
            let _ = consumer.messages().len();
        }
    });
}
