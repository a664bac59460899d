//! The decisions being carried out now (OS authentication, signing, the
//! audit row, the answer to the agent), so that Quit and Restart never cut
//! one in half: a restart asked from the app is refused while one runs, and
//! a stop (Quit in the tray, a signal, a restart) first refuses new ones and
//! waits for those running to finish, their answers handed to the agents'
//! connections. Stopping in the middle could leave a signature in the audit
//! log whose token the agent never got, and an agent that asks again after
//! the restart would have the same thing signed twice.

use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// Counts the decisions running; cheap to share.
#[derive(Debug, Default)]
pub struct InFlight {
    state: Mutex<State>,
    idle: Notify,
}

#[derive(Debug, Default)]
struct State {
    running: usize,
    stopping: bool,
}

/// Why a decision may not start: custody is stopping.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("custody is stopping: nothing more is decided in this run; the request waits for the agent to ask again once custody runs")]
pub struct Stopping;

/// One decision running, counted until dropped (move it into the task that
/// carries the decision out, so that it counts as long as the work does).
#[derive(Debug)]
pub struct Decision {
    of: Arc<InFlight>,
}

impl Drop for Decision {
    fn drop(&mut self) {
        let mut st = self.of.lock();
        st.running = st.running.saturating_sub(1);
        if st.running == 0 {
            self.of.idle.notify_waiters();
        }
    }
}

impl InFlight {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A counter and a flag: a panic elsewhere cannot leave them torn.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts a decision that starts now; refused once custody is stopping.
    pub fn begin(self: &Arc<Self>) -> Result<Decision, Stopping> {
        let mut st = self.lock();
        if st.stopping {
            return Err(Stopping);
        }
        st.running += 1;
        Ok(Decision { of: self.clone() })
    }

    /// How many decisions are running.
    pub fn running(&self) -> usize {
        self.lock().running
    }

    /// For a restart asked from the app: refused, with a sentence, while a
    /// decision runs (the human sees why and restarts once it is done).
    pub fn may_restart(&self) -> Result<(), String> {
        match self.running() {
            0 => Ok(()),
            1 => Err("A decision is being carried out (OS authentication or signing): restart once it is done.".into()),
            n => Err(format!("{n} decisions are being carried out (OS authentication or signing): restart once they are done.")),
        }
    }

    /// For a stop: refuses new decisions from now on, then waits for the
    /// running ones, at most `limit`. `true` when none is left.
    pub async fn stop_and_wait(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let idle = self.idle.notified();
            tokio::pin!(idle);
            // Registered before the count is read: a decision ending in
            // between still wakes this wait.
            idle.as_mut().enable();
            {
                let mut st = self.lock();
                st.stopping = true;
                if st.running == 0 {
                    return true;
                }
            }
            if tokio::time::timeout_at(deadline, idle).await.is_err() {
                return self.running() == 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn quit_and_restart_wait_for_a_decision_in_flight_and_refuse_new_ones() {
        let in_flight = Arc::new(InFlight::default());
        assert_eq!(in_flight.may_restart(), Ok(()));
        let decision = in_flight.begin().expect("a decision starts");
        // Restart from the app: refused with a sentence while it runs.
        let e = in_flight.may_restart().unwrap_err();
        assert!(e.contains("restart once it is done"), "{e}");
        // Quit: waits for it (it would not finish within 200 ms here)...
        let stopper = in_flight.clone();
        let stop =
            tokio::spawn(async move { stopper.stop_and_wait(Duration::from_secs(30)).await });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(
            !stop.is_finished(),
            "the stop did not wait for the decision"
        );
        // ... refuses a new decision meanwhile (a retried request is not
        // signed a second time by a custody on its way out) ...
        assert_eq!(in_flight.begin().unwrap_err(), Stopping);
        // ... and goes on once the decision is done.
        drop(decision);
        let done = tokio::time::timeout(Duration::from_secs(5), stop)
            .await
            .expect("the stop went on after the decision")
            .unwrap();
        assert!(done);
        assert_eq!(in_flight.running(), 0);
    }

    #[tokio::test]
    async fn a_stop_gives_up_waiting_after_its_limit() {
        let in_flight = Arc::new(InFlight::default());
        let _stuck = in_flight.begin().unwrap();
        assert!(!in_flight.stop_and_wait(Duration::from_millis(50)).await);
    }
}
