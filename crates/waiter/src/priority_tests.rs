//! Priority and weight under `WAITER_MAX_RATE`, over the fakes: who takes the budget's earliest
//! seconds, what a job's weight uses of it, and that critical jobs neither wait nor count.

use std::collections::BTreeMap;

use chrono::{DateTime, TimeDelta, Utc};

use crate::poller::{Dispatcher, PollerGroup, RunSummary};
use crate::ports::Clock;
use crate::testing::{config, stored, FakeClock, FakeQueue, Faults, FaultyStore, MemStore, Sent};

/// One overdue job to store: id, milliseconds overdue, priority, weight.
type Spec = (&'static str, i64, u16, u16);

struct Run {
    summary: RunSummary,
    sent: Vec<Sent>,
    started: DateTime<Utc>,
    store: MemStore,
}

async fn run(jobs: &[Spec], shards: u32, settings: &[(&str, &str)]) -> Run {
    run_in_groups(jobs, shards, 1, settings).await
}

/// `run` by `groups` poller groups at once, each its own dispatcher (another process), over
/// one store whose calls take up to 15 ms.
async fn run_in_groups(jobs: &[Spec], shards: u32, groups: u32, settings: &[(&str, &str)]) -> Run {
    run_over(MemStore::default(), jobs, shards, groups, settings).await
}

/// `run_in_groups` over `store`.
async fn run_over(
    store: MemStore,
    jobs: &[(&str, i64, u16, u16)],
    shards: u32,
    groups: u32,
    settings: &[(&str, &str)],
) -> Run {
    let clock = FakeClock::default();
    let now = clock.now();
    for (id, overdue_ms, priority, weight) in jobs {
        let mut job = stored("orders", id, now - TimeDelta::milliseconds(*overdue_ms), shards);
        job.job.priority = *priority;
        job.job.weight = *weight;
        store.insert(job);
    }
    let queue = FakeQueue::new(clock.clone());
    let shards = shards.to_string();
    let mut all = vec![("WAITER_SHARDS", shards.as_str()), ("WAITER_LOOKAHEAD", "0")];
    all.extend_from_slice(settings);
    let cfg = config("orders", &all);
    let slow = FaultyStore {
        inner: store.clone(),
        faults: Faults::seeded(3, 0.0).with_latency(15),
    };
    let deadline = now + TimeDelta::seconds(60);
    let runs = (0..groups).map(|group| {
        let d = Dispatcher::new(cfg.clone(), slow.clone(), queue.clone(), clock.clone());
        async move {
            match groups {
                1 => d.run(deadline).await,
                _ => d.run_group(deadline, Some(PollerGroup { group, groups })).await,
            }
        }
    });
    let mut summary = RunSummary::default();
    for s in futures::future::join_all(runs).await {
        summary.dispatched += s.dispatched;
        summary.held_back += s.held_back;
    }
    Run {
        summary,
        sent: queue.sent(),
        started: now,
        store,
    }
}

fn arrival(s: &Sent) -> DateTime<Utc> {
    s.at + TimeDelta::seconds(i64::from(s.message.delay_seconds.unwrap_or(0)))
}

impl Run {
    /// Seconds after the run's start each job arrives in, by id (the fixture's body is
    /// `body-{id}`).
    fn seconds(&self) -> BTreeMap<String, i64> {
        self.sent
            .iter()
            .map(|m| {
                let id = m.message.body.trim_start_matches("body-").to_owned();
                (id, arrival(m).timestamp() - self.started.timestamp())
            })
            .collect()
    }

    /// Budget units arriving per second (a job counts its weight, a critical job nothing).
    fn units(&self, jobs: &[Spec]) -> BTreeMap<i64, u16> {
        let mut units = BTreeMap::new();
        for (id, second) in self.seconds() {
            let (_, _, priority, weight) = jobs.iter().find(|j| j.0 == id).copied().unwrap();
            if priority != 0 {
                *units.entry(second).or_default() += weight;
            }
        }
        units
    }
}

/// 16 jobs of the default priority, then 4 urgent ones enqueued last (due latest, within the
/// same second), and one critical one.
fn backlog() -> Vec<Spec> {
    const IDS: [&str; 21] = [
        "n00", "n01", "n02", "n03", "n04", "n05", "n06", "n07", "n08", "n09", "n10", "n11", "n12", "n13", "n14", "n15",
        "u0", "u1", "u2", "u3", "crit",
    ];
    IDS.iter()
        .enumerate()
        .map(|(i, id)| {
            let priority = match *id {
                "crit" => 0,
                u if u.starts_with('u') => 1,
                _ => 100,
            };
            (*id, 500 - i as i64, priority, 1)
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn urgent_jobs_enqueued_last_take_the_first_second_and_a_critical_one_is_not_held_back() {
    let jobs = backlog();
    let r = run(&jobs, 1, &[("WAITER_MAX_RATE", "4")]).await;
    assert_eq!(r.summary.dispatched, 21, "{:?}", r.summary);
    let seconds = r.seconds();
    for u in ["u0", "u1", "u2", "u3", "crit"] {
        assert_eq!(seconds[u], 0, "{u} arrives in the first second: {seconds:?}");
    }
    // The rest by their due time, 4 a second after the urgent ones.
    for i in 0..16 {
        assert_eq!(seconds[&format!("n{i:02}")], 1 + i / 4, "{seconds:?}");
    }
    assert!(r.units(&jobs).values().all(|n| *n <= 4), "{:?}", r.units(&jobs));
    assert!(r.sent.iter().all(|m| arrival(m) >= r.started), "never early");
    // Held back: every default job (its own second was full).
    assert_eq!(r.summary.held_back, 16, "{:?}", r.summary);
}

#[tokio::test(start_paused = true)]
async fn across_four_shards_and_two_poller_groups_the_urgent_jobs_still_take_the_first_second() {
    let jobs = backlog();
    let r = run_in_groups(&jobs, 4, 2, &[("WAITER_MAX_RATE", "4")]).await;
    assert_eq!(r.summary.dispatched, 21, "{:?}", r.summary);
    let seconds = r.seconds();
    for u in ["u0", "u1", "u2", "u3", "crit"] {
        assert_eq!(seconds[u], 0, "{u} arrives in the first second: {seconds:?}");
    }
    assert!(
        seconds
            .iter()
            .filter(|(id, _)| id.starts_with('n'))
            .all(|(_, s)| *s >= 1),
        "{seconds:?}"
    );
    assert!(r.units(&jobs).values().all(|n| *n <= 4), "{:?}", r.units(&jobs));
    assert_eq!(r.store.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn without_a_rate_limit_priority_and_weight_change_nothing() {
    let jobs = backlog();
    let r = run(&jobs, 1, &[]).await;
    assert_eq!(r.summary.dispatched, 21);
    assert!(r.seconds().values().all(|s| *s == 0), "{:?}", r.seconds());
    assert_eq!(r.summary.held_back, 0);
}

/// Jobs due over three seconds: the urgent one is due last.
fn spread() -> Vec<Spec> {
    vec![
        ("early-a", 3_000, 100, 1),
        ("early-b", 2_900, 100, 1),
        ("mid-a", 2_000, 500, 1),
        ("mid-b", 1_900, 100, 1),
        ("late-urgent", 1_000, 5, 1),
    ]
}

#[tokio::test(start_paused = true)]
async fn time_order_serves_the_earliest_due_first_and_priority_order_the_lowest_number() {
    let by_time = run(&spread(), 1, &[("WAITER_MAX_RATE", "1")]).await.seconds();
    assert_eq!(
        [
            by_time["early-a"],
            by_time["early-b"],
            by_time["mid-b"],
            by_time["mid-a"],
            by_time["late-urgent"]
        ],
        [0, 1, 2, 3, 4],
        "time: due second first; within one second (mid), the lower number: {by_time:?}"
    );
    let by_priority = run(
        &spread(),
        1,
        &[("WAITER_MAX_RATE", "1"), ("WAITER_PRIORITY_ORDER", "priority")],
    )
    .await
    .seconds();
    assert_eq!(
        [
            by_priority["late-urgent"],
            by_priority["early-a"],
            by_priority["early-b"],
            by_priority["mid-b"],
            by_priority["mid-a"]
        ],
        [0, 1, 2, 3, 4],
        "priority: lowest number first, then due time: {by_priority:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_job_counts_its_weight_and_one_that_does_not_fit_moves_to_the_next_second() {
    // Rate 4: heavy (3) fills most of second 0; light-1 takes the last unit; heavy-2 (2) does
    // not fit in what is left and moves on, light-2 fits beside it in second 1.
    let jobs: Vec<Spec> = vec![
        ("heavy", 400, 100, 3),
        ("light-1", 300, 100, 1),
        ("heavy-2", 200, 100, 2),
        ("light-2", 100, 100, 1),
        ("huge", 50, 100, 9),
    ];
    let r = run(&jobs, 1, &[("WAITER_MAX_RATE", "4")]).await;
    let s = r.seconds();
    assert_eq!(
        [s["heavy"], s["light-1"], s["heavy-2"], s["light-2"], s["huge"]],
        [0, 0, 1, 1, 2],
        "{s:?}"
    );
    // Heavier than the whole budget: a second to itself, never more than the budget in one.
    assert_eq!(r.units(&jobs)[&2], 9);
    assert!(r.units(&jobs).iter().filter(|(s, _)| **s != 2).all(|(_, n)| *n <= 4));
    assert_eq!(r.store.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn priority_and_weight_survive_the_store_and_travel_with_the_message() {
    let jobs: Vec<Spec> = vec![("ranked", 10, 7, 3), ("plain", 5, 100, 1)];
    let r = run(&jobs, 1, &[]).await;
    let attrs = |id: &str| {
        r.sent
            .iter()
            .find(|m| m.message.body == format!("body-{id}"))
            .unwrap()
            .message
            .attributes
            .clone()
    };
    let ranked = attrs("ranked");
    assert_eq!(crate::job::number_in::<u16>(&ranked, "waiter.priority"), Some(7));
    assert_eq!(crate::job::number_in::<u16>(&ranked, "waiter.weight"), Some(3));
    assert_eq!(
        attrs("plain").keys().collect::<Vec<_>>(),
        ["waiter.job_id"],
        "a job that sets neither carries nothing more than its id"
    );
    // Issue 82 (13): the id travels by default; a deployment turns it off.
    assert_eq!(
        crate::job::number_in::<String>(&ranked, "waiter.job_id").as_deref(),
        Some("ranked")
    );
    let off = run(&jobs, 1, &[("WAITER_JOB_ID_ATTRIBUTE", "false")]).await;
    assert!(off
        .sent
        .iter()
        .all(|m| !m.message.attributes.contains_key("waiter.job_id")));
}

/// Issue 72: a herd of one priority, due in one second, under the rate. The partitions of a
/// process take turns at the ledger (15 ms a change, as `DynamoStore`'s do), so a booking waits
/// for every other partition's. The run booked each partition's jobs a hundred at a time
/// between its sends: the sends waited on those bookings, missed the seconds booked for them,
/// and each miss booked again one batch at a time, until the rebooked seconds had passed too.
/// 1 565 of 4 000 went out in 415 s at ten ledger writes per job; here every job goes in one
/// run, with a ledger write per batch of ten at most, beside the two per partition (its
/// "reading" head and its best job), and few reads.
#[tokio::test(start_paused = true)]
async fn a_herd_due_in_one_second_under_the_rate_books_in_few_ledger_calls_and_all_goes_in_one_run() {
    const JOBS: usize = 4_000;
    const SHARDS: u32 = 16;
    const RATE: usize = 1_000;
    let ids: Vec<String> = (0..JOBS).map(|i| format!("h{i:04}")).collect();
    let jobs: Vec<(&str, i64, u16, u16)> = ids.iter().map(|id| (id.as_str(), 1_000, 100, 1)).collect();
    let store = MemStore {
        ledger_turn: std::time::Duration::from_millis(15),
        ..MemStore::default()
    };
    let r = run_over(store, &jobs, SHARDS, 1, &[("WAITER_MAX_RATE", "1000")]).await;
    assert_eq!(r.summary.dispatched, JOBS as u64, "{:?}", r.summary);
    assert_eq!(r.store.len(), 0);
    let mut per_second: BTreeMap<i64, usize> = BTreeMap::new();
    for m in &r.sent {
        assert!(arrival(m) >= r.started - TimeDelta::seconds(1), "never early");
        *per_second
            .entry(arrival(m).timestamp() - r.started.timestamp())
            .or_default() += 1;
    }
    assert!(per_second.values().all(|n| *n <= RATE), "{per_second:?}");
    // 4 000 at 1 000 a second: four seconds, from the run's own.
    assert!(per_second.keys().all(|s| (0..=4).contains(s)), "{per_second:?}");
    let st = r.store.state.lock().unwrap();
    let batches = JOBS / 10;
    let partitions = SHARDS as usize;
    assert!(
        st.ledger_puts <= batches + 2 * partitions,
        "ledger writes: {} for {batches} batches over {partitions} partitions",
        st.ledger_puts
    );
    // Reads: a partition that has read its jobs waits, 100 ms a round, for the ones still
    // reading (their turns at the ledger come one after another), 34 to 56 here by the order
    // the runtime polls the partitions in.
    assert!(st.ledger_gets <= 4 * partitions, "ledger reads: {}", st.ledger_gets);
}

/// A ranked backlog past what the budget holds up to the horizon: the run books to the horizon,
/// sends that, and leaves the rest stored, unread. With booking held until what is booked has
/// gone (issue 72), the booking that found the budget full came after the last batch, which was
/// where the run stopped reading: the partition's loop then spun without a call in flight. Run
/// on a thread of its own, so that a loop that never yields fails the test instead of hanging it.
#[test]
fn a_ranked_backlog_past_the_horizon_books_to_it_and_leaves_the_rest_stored() {
    let (done, outcome) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("runtime");
        // More than a partition holds read (1 000), so that it stops reading at the horizon.
        let ids: Vec<String> = (0..6_000).map(|i| format!("b{i:04}")).collect();
        let jobs: Vec<(&str, i64, u16, u16)> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| (id.as_str(), 1_000, if i % 10 == 0 { 1 } else { 100 }, 1))
            .collect();
        let store = MemStore {
            ledger_turn: std::time::Duration::from_millis(15),
            page_size: 100,
            ..MemStore::default()
        };
        let r = rt.block_on(run_over(store, &jobs, 2, 1, &[("WAITER_MAX_RATE", "20")]));
        let mut per_second: BTreeMap<i64, usize> = BTreeMap::new();
        for second in r.seconds().into_values() {
            *per_second.entry(second).or_default() += 1;
        }
        let _ = done.send((r.summary.dispatched, r.store.len(), per_second));
    });
    let (dispatched, left, per_second) = outcome
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the run ends (a partition's loop spun with nothing in flight)");
    // 20 a second up to the horizon (120 s, and the seconds the run's own length adds).
    assert!((2_400..=2_600).contains(&dispatched), "{dispatched}");
    assert_eq!(dispatched as usize + left, 6_000);
    assert!(per_second.values().all(|n| *n <= 20), "{per_second:?}");
}
