//! The audio engine's DSP with real signals: tones, noise and speech-like bursts go through the
//! real resampler and the real libopus, and the tests measure what comes out.

use walkie_dsp::codec::{MAX_PACKET_BYTES, OpusDecoder, OpusEncoder};
use walkie_dsp::meter::{LevelMeter, SILENCE_DBFS};
use walkie_dsp::preroll::PreRoll;
use walkie_dsp::resample::StreamResampler;
use walkie_dsp::{CALL_RATE_HZ, FRAME_SAMPLES};

/// A pure tone. The phase is computed in f64: an f32 phase drifts by whole degrees after a
/// second, and that phase noise would smear the tone across the band the tests measure.
fn tone(frequency_hz: f32, rate_hz: u32, seconds: f32, amplitude: f32) -> Vec<f32> {
    let count = (rate_hz as f32 * seconds) as usize;
    let step = 2.0 * std::f64::consts::PI * f64::from(frequency_hz) / f64::from(rate_hz);
    (0..count)
        .map(|i| (f64::from(amplitude) * (step * i as f64).sin()) as f32)
        .collect()
}

fn rms(samples: &[f32]) -> f32 {
    (samples.iter().map(|s| s * s).sum::<f32>() / samples.len() as f32).sqrt()
}

fn dbfs(amplitude: f32) -> f32 {
    20.0 * amplitude.max(1e-12).log10()
}

/// Amplitude of `frequency_hz` in `samples`, by correlation with a sine and a cosine.
fn amplitude_at(samples: &[f32], frequency_hz: f32, rate_hz: u32) -> f32 {
    let (mut sin_sum, mut cos_sum) = (0.0f64, 0.0f64);
    for (i, &s) in samples.iter().enumerate() {
        let phase =
            2.0 * std::f64::consts::PI * f64::from(frequency_hz) * i as f64 / f64::from(rate_hz);
        sin_sum += f64::from(s) * phase.sin();
        cos_sum += f64::from(s) * phase.cos();
    }
    (2.0 * (sin_sum * sin_sum + cos_sum * cos_sum).sqrt() / samples.len() as f64) as f32
}

/// Resamples in uneven pieces, the way device callbacks deliver audio.
fn resample_in_pieces(resampler: &mut StreamResampler, input: &[f32]) -> Vec<f32> {
    let mut output = Vec::with_capacity(resampler.max_output_for(input.len()));
    for piece in input.chunks(317) {
        resampler.process(piece, &mut output);
    }
    output
}

#[test]
fn a_tone_above_the_new_nyquist_is_rejected_by_at_least_90_db_going_from_48_to_24_khz() {
    let mut resampler = StreamResampler::new(48_000, 24_000).unwrap();
    let output = resample_in_pieces(&mut resampler, &tone(15_000.0, 48_000, 1.0, 1.0));
    let settled = &output[resampler.output_delay_samples() + 480..];
    let residual_dbfs = dbfs(rms(settled));
    assert!(
        residual_dbfs <= -90.0,
        "15 kHz leaked through at {residual_dbfs:.1} dBFS"
    );
}

#[test]
fn a_speech_band_tone_passes_48_to_24_khz_at_its_level() {
    let mut resampler = StreamResampler::new(48_000, 24_000).unwrap();
    let output = resample_in_pieces(&mut resampler, &tone(1_000.0, 48_000, 1.0, 0.5));
    assert_eq!(output.len(), 24_000, "1 s at 48 kHz is 1 s at 24 kHz");
    let settled = &output[resampler.output_delay_samples() + 240..];
    let gain_db = dbfs(amplitude_at(settled, 1_000.0, 24_000)) - dbfs(0.5);
    assert!(
        gain_db.abs() < 0.1,
        "1 kHz changed level by {gain_db:.3} dB"
    );
}

#[test]
fn upsampling_24_to_48_khz_keeps_a_tone_clean() {
    let mut resampler = StreamResampler::new(24_000, 48_000).unwrap();
    let output = resample_in_pieces(&mut resampler, &tone(440.0, 24_000, 1.0, 0.5));
    assert_eq!(output.len(), 48_000);
    let settled: Vec<f32> = output[resampler.output_delay_samples() + 960..].to_vec();
    let amplitude = amplitude_at(&settled, 440.0, 48_000);
    assert!((dbfs(amplitude) - dbfs(0.5)).abs() < 0.1);
    // What is left after removing the 440 Hz component is noise and distortion.
    let phase_fit: Vec<f32> = {
        let (mut s, mut c) = (0.0f64, 0.0f64);
        for (i, &x) in settled.iter().enumerate() {
            let p = 2.0 * std::f64::consts::PI * 440.0 * i as f64 / 48_000.0;
            s += f64::from(x) * p.sin();
            c += f64::from(x) * p.cos();
        }
        let n = settled.len() as f64;
        let (a, b) = (2.0 * s / n, 2.0 * c / n);
        (0..settled.len())
            .map(|i| {
                let p = 2.0 * std::f64::consts::PI * 440.0 * i as f64 / 48_000.0;
                (a * p.sin() + b * p.cos()) as f32
            })
            .collect()
    };
    let residual: Vec<f32> = settled.iter().zip(&phase_fit).map(|(x, f)| x - f).collect();
    let thd_n_db = dbfs(rms(&residual)) - dbfs(rms(&phase_fit));
    assert!(thd_n_db < -80.0, "THD+N {thd_n_db:.1} dB");
}

#[test]
fn equal_rates_pass_samples_through_untouched() {
    let mut resampler = StreamResampler::new(48_000, 48_000).unwrap();
    let input = tone(300.0, 48_000, 0.1, 0.3);
    assert_eq!(resample_in_pieces(&mut resampler, &input), input);
    assert_eq!(resampler.output_delay_samples(), 0);
}

#[test]
fn a_zero_sample_rate_is_refused_with_the_rates_named() {
    let error = StreamResampler::new(0, 48_000).unwrap_err().to_string();
    assert!(
        error.contains("0 Hz") && error.contains("48000 Hz"),
        "{error}"
    );
}

fn encode_all(encoder: &mut OpusEncoder, signal: &[f32]) -> Vec<Vec<u8>> {
    let mut packet = [0u8; MAX_PACKET_BYTES];
    signal
        .chunks_exact(FRAME_SAMPLES)
        .map(|frame| {
            let len = encoder.encode(frame, &mut packet).unwrap();
            packet[..len].to_vec()
        })
        .collect()
}

#[test]
fn opus_carries_a_voice_band_tone_at_its_frequency_and_level() {
    let signal = tone(440.0, CALL_RATE_HZ, 1.0, 0.5);
    let mut encoder = OpusEncoder::new(32_000).unwrap();
    let packets = encode_all(&mut encoder, &signal);
    assert_eq!(packets.len(), 50);
    let mean_bytes = packets.iter().map(Vec::len).sum::<usize>() as f32 / 50.0;
    let bitrate_bps = mean_bytes * 8.0 * 50.0;
    assert!(
        (20_000.0..45_000.0).contains(&bitrate_bps),
        "{bitrate_bps} b/s"
    );

    let mut decoder = OpusDecoder::new().unwrap();
    let mut frame = [0.0f32; FRAME_SAMPLES];
    let mut decoded = Vec::new();
    for packet in &packets {
        assert_eq!(decoder.decode(packet, &mut frame).unwrap(), FRAME_SAMPLES);
        decoded.extend_from_slice(&frame);
    }
    let settled = &decoded[4_800..];
    let level_db = dbfs(amplitude_at(settled, 440.0, CALL_RATE_HZ));
    assert!(
        (level_db - dbfs(0.5)).abs() < 1.5,
        "440 Hz came out at {level_db:.1} dBFS"
    );
    let off_band = dbfs(amplitude_at(settled, 1_320.0, CALL_RATE_HZ));
    assert!(
        off_band < level_db - 25.0,
        "third harmonic at {off_band:.1} dBFS"
    );
}

#[test]
fn a_lost_packet_is_concealed_with_a_continuation_not_silence() {
    let signal = tone(300.0, CALL_RATE_HZ, 0.4, 0.5);
    let mut encoder = OpusEncoder::new(32_000).unwrap();
    let packets = encode_all(&mut encoder, &signal);
    let mut decoder = OpusDecoder::new().unwrap();
    let mut frame = [0.0f32; FRAME_SAMPLES];
    for packet in &packets[..10] {
        decoder.decode(packet, &mut frame).unwrap();
    }
    assert_eq!(decoder.conceal(&mut frame).unwrap(), FRAME_SAMPLES);
    assert!(
        dbfs(rms(&frame)) > -20.0,
        "concealment fell silent: {:.1} dBFS",
        dbfs(rms(&frame))
    );
}

#[test]
fn a_lost_packet_is_rebuilt_from_the_next_packets_fec() {
    let signal = tone(300.0, CALL_RATE_HZ, 0.4, 0.5);
    let mut encoder = OpusEncoder::new(32_000).unwrap();
    let packets = encode_all(&mut encoder, &signal);
    let mut decoder = OpusDecoder::new().unwrap();
    let mut frame = [0.0f32; FRAME_SAMPLES];
    for packet in &packets[..10] {
        decoder.decode(packet, &mut frame).unwrap();
    }
    assert_eq!(
        decoder.recover(&packets[11], &mut frame).unwrap(),
        FRAME_SAMPLES
    );
    assert!(dbfs(amplitude_at(&frame, 300.0, CALL_RATE_HZ)) > -15.0);
}

#[test]
fn a_frame_of_the_wrong_length_is_refused_by_length() {
    let mut encoder = OpusEncoder::new(32_000).unwrap();
    let mut packet = [0u8; MAX_PACKET_BYTES];
    let error = encoder.encode(&[0.0; 480], &mut packet).unwrap_err();
    assert!(error.to_string().contains("480"), "{error}");
}

#[test]
fn garbage_is_a_decode_error_not_a_crash() {
    let mut decoder = OpusDecoder::new().unwrap();
    let mut frame = [0.0f32; FRAME_SAMPLES];
    // A TOC byte announcing a code-3 packet with an impossible frame count.
    let result = decoder.decode(&[0xFF, 0xFF, 0xFF], &mut frame);
    assert!(result.is_err(), "{result:?}");
}

#[test]
fn a_full_scale_sine_reads_minus_3_dbfs_rms_and_0_dbfs_peak() {
    let mut meter = LevelMeter::new(48_000, 30);
    let mut readings = Vec::new();
    meter.feed(&tone(1_000.0, 48_000, 1.0, 1.0), |level| {
        readings.push(level)
    });
    assert_eq!(readings.len(), 30);
    for level in &readings {
        assert!((level.rms_dbfs + 3.01).abs() < 0.05, "{level:?}");
        assert!(level.peak_dbfs.abs() < 0.05, "{level:?}");
    }
}

#[test]
fn silence_reads_as_the_silence_floor() {
    let mut meter = LevelMeter::new(48_000, 30);
    let mut readings = Vec::new();
    meter.feed(&[0.0; 1_600], |level| readings.push(level));
    assert_eq!(readings.len(), 1);
    assert_eq!(readings[0].rms_dbfs, SILENCE_DBFS);
    assert_eq!(readings[0].peak_dbfs, SILENCE_DBFS);
}

#[test]
fn the_pre_roll_hands_back_the_most_recent_audio_oldest_first() {
    let mut preroll = PreRoll::new(1_000, 300);
    assert_eq!(preroll.capacity(), 300);
    let counting: Vec<f32> = (0..1_000).map(|i| i as f32).collect();
    for piece in counting.chunks(70) {
        preroll.push(piece);
    }
    let mut drained = Vec::new();
    preroll.drain(|slice| drained.extend_from_slice(slice));
    assert_eq!(drained, counting[700..]);
    assert!(preroll.is_empty());
}

#[test]
fn a_pre_roll_not_yet_full_hands_back_what_it_has() {
    let mut preroll = PreRoll::new(1_000, 300);
    preroll.push(&[1.0, 2.0, 3.0]);
    let mut drained = Vec::new();
    preroll.drain(|slice| drained.extend_from_slice(slice));
    assert_eq!(drained, [1.0, 2.0, 3.0]);
}

#[test]
fn a_cleared_pre_roll_hands_back_only_what_came_after() {
    let mut preroll = PreRoll::new(1_000, 300);
    preroll.push(&[1.0; 200]);
    preroll.clear();
    assert!(preroll.is_empty());
    preroll.push(&[2.0, 3.0]);
    let mut drained = Vec::new();
    preroll.drain(|slice| drained.extend_from_slice(slice));
    assert_eq!(drained, [2.0, 3.0]);
}

#[test]
fn one_push_longer_than_the_pre_roll_keeps_its_tail() {
    let mut preroll = PreRoll::new(1_000, 10);
    let long: Vec<f32> = (0..25).map(|i| i as f32).collect();
    preroll.push(&long[..3]);
    preroll.push(&long[3..]);
    let mut drained = Vec::new();
    preroll.drain(|slice| drained.extend_from_slice(slice));
    assert_eq!(drained, long[15..]);
}

#[test]
fn an_opus_complexity_outside_0_to_10_is_refused_by_value() {
    let error = OpusEncoder::with_complexity(32_000, 11).unwrap_err();
    assert!(error.to_string().contains("11"), "{error}");
    assert!(OpusEncoder::with_complexity(32_000, -1).is_err());
    assert!(OpusEncoder::with_complexity(32_000, 0).is_ok());
}

/// Normalised correlation of two equally long signals (1: the same shape).
fn correlation(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    dot / (rms(a) * rms(b) * a.len() as f32).max(1e-12)
}

#[test]
fn speech_at_the_default_complexity_survives_the_codec_and_every_lost_voiced_frame_is_rebuilt_from_fec()
 {
    let speech: Vec<f32> = walkie_dsp::testkit::speech_like(1_000)
        .iter()
        .map(|&sample| f32::from(sample) / 32_768.0)
        .collect();
    let mut encoder = OpusEncoder::new(32_000).unwrap();
    let packets = encode_all(&mut encoder, &speech);
    let mut frame = [0.0f32; FRAME_SAMPLES];
    let mut decoder = OpusDecoder::new().unwrap();
    let mut clean = Vec::new();
    for packet in &packets {
        decoder.decode(packet, &mut frame).unwrap();
        clean.extend_from_slice(&frame);
    }
    // libopus delays its output by 6.5 ms (312 samples at 48 kHz).
    let delay = 312;
    let shape = correlation(
        &clean[delay + 4_800..],
        &speech[4_800..speech.len() - delay],
    );
    assert!(
        shape > 0.8,
        "speech came out of the codec reshaped: {shape:.3}"
    );

    // Each voiced frame in turn is lost, then rebuilt from the next packet's FEC, from the
    // first words on: a push-to-talk utterance is short, FEC must not need time to start.
    let mut rebuilt_frames = 0;
    for lost in 1..packets.len() - 1 {
        let span = lost * FRAME_SAMPLES..(lost + 1) * FRAME_SAMPLES;
        if dbfs(rms(&clean[span.clone()])) < -40.0 {
            continue;
        }
        let mut decoder = OpusDecoder::new().unwrap();
        for packet in &packets[..lost] {
            decoder.decode(packet, &mut frame).unwrap();
        }
        decoder.recover(&packets[lost + 1], &mut frame).unwrap();
        let likeness = correlation(&frame, &clean[span]);
        assert!(
            likeness > 0.5,
            "lost frame {lost} was not rebuilt from FEC (likeness {likeness:.3})"
        );
        rebuilt_frames += 1;
    }
    assert!(
        rebuilt_frames > 30,
        "only {rebuilt_frames} voiced frames tried"
    );
}
