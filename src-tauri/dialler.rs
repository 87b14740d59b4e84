//! The one way Walkie places a call: the conversation's first call, its redials, new settings'
//! call, Settings' Test connection and Hear this voice. Each fails as one
//! [`walkie_conversation::DialFailure`], with one rule for whether calling again may help
//! ([`crate::plan::Provider::dial_failure`]).

use std::sync::Arc;

use walkie_conversation::{DialFailure, DialStage};
use walkie_rtc::Call;
use walkie_session::turn::ProviderFamily;

use crate::history::Continuing;
use crate::plan::{Plan, Provider};
use crate::tool_servers::ToolServers;

/// Places calls: the app's local provider (started the first time a call goes to it) and the
/// tool servers a Live session declares when it is placed, shared by the calls being placed.
#[derive(Clone, Default)]
pub struct Dialler {
    local: Arc<tokio::sync::OnceCell<walkie_local::LocalProvider>>,
    pub(crate) tool_servers: Arc<tokio::sync::Mutex<ToolServers>>,
}

impl Dialler {
    /// Places a call for a new conversation (or new settings), given the saved conversation it
    /// goes on with when its family takes that at call setup.
    pub(crate) async fn place(
        self,
        plan: Plan,
        continuing: Option<Box<Continuing>>,
    ) -> Result<Call, DialFailure> {
        let history = match (continuing, plan.family()) {
            (Some(saved), ProviderFamily::Live) => {
                walkie_conversation::call_setup_history(saved.earlier)
            }
            _ => Vec::new(),
        };
        self.connect(plan, history, false).await
    }

    /// Places a call for the conversation under way, whose call dropped.
    pub(crate) async fn redial(
        self,
        plan: Plan,
        history: Vec<walkie_openai::Item>,
    ) -> Result<Call, DialFailure> {
        self.connect(plan, history, true).await
    }

    /// Places a call with `plan`, carrying `history` where its family takes it at call setup;
    /// `answered_before`: a call of this conversation was answered already (a redial), which
    /// the rule for calling again weighs.
    pub(crate) async fn connect(
        self,
        mut plan: Plan,
        history: Vec<walkie_openai::Item>,
        answered_before: bool,
    ) -> Result<Call, DialFailure> {
        let provider = plan
            .provider
            .clone()
            .map_err(|reason| DialFailure::settings(reason.to_string()))?;
        let local = match provider {
            Provider::Local => Some(self.local_provider().await?.endpoint()),
            _ => None,
        };
        let endpoint = provider
            .endpoint(local)
            .map_err(|reason| DialFailure::settings(reason.to_string()))?;
        if plan.family() == ProviderFamily::Live {
            // A Live session declares its tools when it is placed: the servers are asked first.
            let (servers, _) = self
                .tool_servers
                .lock()
                .await
                .for_list(&plan.tool_servers)
                .await;
            plan.live_outside_tools = servers
                .map(|servers| crate::tool_servers::outside_tools(&servers, &plan.tool_servers))
                .unwrap_or_default()
                .into_iter()
                .map(|tool| tool.definition)
                .collect();
        }
        Call::connect(plan.call_config_with_history(endpoint, history))
            .await
            .map_err(|error| {
                log::warn!("could not connect to {}: {error}", provider.label());
                provider.dial_failure(&error, answered_before)
            })
    }

    /// The app's local provider, started the first time a call goes to it; it lives as long
    /// as the app, so reconnecting reuses it.
    async fn local_provider(&self) -> Result<&walkie_local::LocalProvider, DialFailure> {
        self.local
            .get_or_try_init(|| {
                walkie_local::LocalProvider::start(walkie_local::ProviderConfig::from_env())
            })
            .await
            .map_err(|error| DialFailure {
                stage: DialStage::LocalProvider,
                ..DialFailure::settings(format!("the local provider could not start: {error}"))
            })
    }
}
