//! Property tests of `#[derive(GraphState)]`: applying a superstep is deterministic,
//! all-or-nothing and agrees with a reference model; channel and update codecs round
//! trip; and checkpoints made of deltas restore what full values restore.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use serde_json::Value;
use stategraph::prelude::*;
use stategraph::{Change, ChannelWrite, InvalidUpdate, MessageOp, Persistence, ReduceError};

/// Order-dependent on purpose: folding the same writes in another order changes it.
fn concat(current: &mut String, update: String) {
    current.push_str(&update);
}

fn keep_max(current: &mut i64, update: i64) {
    *current = (*current).max(update);
}

/// A `with` reducer whose update type differs from the field type.
fn record_len(current: &mut Vec<usize>, update: String) {
    current.push(update.chars().count());
}

/// Every reducer kind, two untracked channels and two delta list types.
#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Props {
    topic: String,
    #[reducer(append)]
    notes: Vec<String>,
    #[reducer(append)]
    events: VecDeque<u16>,
    #[reducer(add)]
    total: i64,
    #[reducer(add)]
    count: u32,
    #[reducer(merge)]
    scores: BTreeMap<String, i64>,
    #[reducer(union)]
    tags: BTreeSet<String>,
    #[reducer(messages)]
    chat: Vec<Message>,
    #[reducer(with = concat)]
    trail: String,
    #[reducer(with = keep_max)]
    best: i64,
    #[reducer(with = record_len, update = String)]
    lens: Vec<usize>,
    #[channel(untracked)]
    scratch: Option<u32>,
    #[channel(untracked)]
    #[reducer(append)]
    cache: Vec<u32>,
}

/// `state` with its untracked channels back at `Default`: what a restore yields.
fn tracked_part(state: &Props) -> Props {
    Props {
        scratch: None,
        cache: Vec::new(),
        ..state.clone()
    }
}

// ---------------------------------------------------------------------------------
// Generated writes
// ---------------------------------------------------------------------------------

/// One builder call.
#[derive(Clone, Debug)]
enum Op {
    Topic(String),
    Notes(Vec<String>),
    OverwriteNotes(Vec<String>),
    Events(Vec<u16>),
    OverwriteEvents(Vec<u16>),
    Total(i64),
    OverwriteTotal(i64),
    Count(u32),
    OverwriteCount(u32),
    Scores(Vec<(String, i64)>),
    OverwriteScores(Vec<(String, i64)>),
    Tags(Vec<String>),
    OverwriteTags(Vec<String>),
    Chat(Vec<ChatOp>),
    OverwriteChat(Vec<Message>),
    Trail(String),
    OverwriteTrail(String),
    Best(i64),
    OverwriteBest(i64),
    Lens(String),
    OverwriteLens(Vec<usize>),
    Scratch(Option<u32>),
    Cache(Vec<u32>),
    OverwriteCache(Vec<u32>),
}

/// One item given to the `chat` builder.
#[derive(Clone, Debug)]
enum ChatOp {
    Upsert(Message),
    Remove(String),
    RemoveAll,
}

/// One task's write: the writer's name and the builder calls making its update.
type WriteSpec = (&'static str, Vec<Op>);
/// One superstep.
type StepSpec = Vec<WriteSpec>;

/// Builds an update by calling the builder methods in order.
fn build(ops: &[Op]) -> PropsUpdate {
    ops.iter().cloned().fold(Props::update(), |u, op| match op {
        Op::Topic(v) => u.topic(v),
        Op::Notes(v) => u.notes(v),
        Op::OverwriteNotes(v) => u.overwrite_notes(v),
        Op::Events(v) => u.events(v),
        Op::OverwriteEvents(v) => u.overwrite_events(VecDeque::from(v)),
        Op::Total(v) => u.total(v),
        Op::OverwriteTotal(v) => u.overwrite_total(v),
        Op::Count(v) => u.count(v),
        Op::OverwriteCount(v) => u.overwrite_count(v),
        Op::Scores(v) => u.scores(v),
        Op::OverwriteScores(v) => u.overwrite_scores(v.into_iter().collect::<BTreeMap<_, _>>()),
        Op::Tags(v) => u.tags(v),
        Op::OverwriteTags(v) => u.overwrite_tags(v.into_iter().collect::<BTreeSet<_>>()),
        Op::Chat(ops) => ops.into_iter().fold(u, |u, op| match op {
            ChatOp::Upsert(m) => u.chat([m]),
            ChatOp::Remove(id) => u.chat([RemoveMessage::new(id)]),
            ChatOp::RemoveAll => u.chat([RemoveAllMessages]),
        }),
        Op::OverwriteChat(v) => u.overwrite_chat(v),
        Op::Trail(v) => u.trail(v),
        Op::OverwriteTrail(v) => u.overwrite_trail(v),
        Op::Best(v) => u.best(v),
        Op::OverwriteBest(v) => u.overwrite_best(v),
        Op::Lens(v) => u.lens(v),
        Op::OverwriteLens(v) => u.overwrite_lens(v),
        Op::Scratch(v) => u.scratch(v),
        Op::Cache(v) => u.cache(v),
        Op::OverwriteCache(v) => u.overwrite_cache(v),
    })
}

fn writes(step: &[WriteSpec]) -> Vec<Write<Props>> {
    step.iter()
        .map(|(writer, ops)| Write::new(*writer, build(ops)))
        .collect()
}

/// Short strings from a small pool (so keys and ids collide), with JSON-escaped
/// and non-ASCII characters.
fn text() -> impl Strategy<Value = String> {
    prop::sample::select(&["", "a", "b", "ab", "é", "q\"\\n"][..]).prop_map(String::from)
}

/// Mostly small numbers, sometimes extremes so `add` overflows.
fn i64_value() -> impl Strategy<Value = i64> {
    prop_oneof![
        8 => -4i64..=4,
        1 => prop::sample::select(&[i64::MAX, i64::MAX - 1, i64::MIN, i64::MIN + 1][..]),
    ]
}

fn u32_value() -> impl Strategy<Value = u32> {
    prop_oneof![8 => 0u32..=4, 1 => u32::MAX - 2..=u32::MAX]
}

/// Ids explicit messages may carry, including ones the reducer assigns (`msg-<n>`).
const IDS: &[&str] = &["a", "b", "msg-0", "msg-1", "msg-2"];

fn message() -> impl Strategy<Value = Message> {
    (
        prop::option::weighted(0.6, prop::sample::select(IDS)),
        0..4u8,
        text(),
        prop::option::weighted(0.15, (text(), any::<i8>())),
    )
        .prop_map(|(id, role, content, call)| {
            let mut m = match role {
                0 => Message::system(content),
                1 => Message::user(content),
                2 => Message::assistant(content),
                _ => Message::tool("call-1", content),
            };
            if let Some(id) = id {
                m = m.with_id(id);
            }
            if let Some((name, n)) = call {
                m = m.with_tool_calls([ToolCall {
                    id: format!("call-{n}"),
                    name,
                    arguments: serde_json::json!({ "n": n, "list": [n, null, "x"] }),
                }]);
            }
            m
        })
}

fn chat_op() -> impl Strategy<Value = ChatOp> {
    prop_oneof![
        8 => message().prop_map(ChatOp::Upsert),
        // Possibly-unknown ids: "zz" is never present.
        2 => prop::sample::select(&["a", "b", "msg-0", "msg-1", "zz"][..])
            .prop_map(|id| ChatOp::Remove(id.to_owned())),
        1 => Just(ChatOp::RemoveAll),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    use prop::collection::vec;
    prop_oneof![
        4 => text().prop_map(Op::Topic),
        4 => vec(text(), 0..3).prop_map(Op::Notes),
        1 => vec(text(), 0..3).prop_map(Op::OverwriteNotes),
        3 => vec(any::<u16>(), 0..3).prop_map(Op::Events),
        1 => vec(any::<u16>(), 0..3).prop_map(Op::OverwriteEvents),
        3 => i64_value().prop_map(Op::Total),
        1 => i64_value().prop_map(Op::OverwriteTotal),
        3 => u32_value().prop_map(Op::Count),
        1 => u32_value().prop_map(Op::OverwriteCount),
        3 => vec((text(), i64_value()), 0..3).prop_map(Op::Scores),
        1 => vec((text(), i64_value()), 0..3).prop_map(Op::OverwriteScores),
        3 => vec(text(), 0..3).prop_map(Op::Tags),
        1 => vec(text(), 0..3).prop_map(Op::OverwriteTags),
        6 => vec(chat_op(), 1..4).prop_map(Op::Chat),
        1 => vec(message(), 0..3).prop_map(Op::OverwriteChat),
        3 => text().prop_map(Op::Trail),
        1 => text().prop_map(Op::OverwriteTrail),
        3 => i64_value().prop_map(Op::Best),
        1 => i64_value().prop_map(Op::OverwriteBest),
        3 => text().prop_map(Op::Lens),
        1 => vec(0usize..5, 0..3).prop_map(Op::OverwriteLens),
        2 => prop::option::of(any::<u32>()).prop_map(Op::Scratch),
        2 => vec(any::<u32>(), 0..3).prop_map(Op::Cache),
        1 => vec(any::<u32>(), 0..3).prop_map(Op::OverwriteCache),
    ]
}

fn write_spec() -> impl Strategy<Value = WriteSpec> {
    (
        prop::sample::select(&["a", "b", "c", "d"][..]),
        prop::collection::vec(op(), 0..4),
    )
}

fn step() -> impl Strategy<Value = StepSpec> {
    prop::collection::vec(write_spec(), 0..4)
}

fn steps() -> impl Strategy<Value = Vec<StepSpec>> {
    prop::collection::vec(step(), 0..8)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        // 256 cases unless `PROPTEST_CASES` says otherwise. Failures are reported on
        // stdout only: no `proptest-regressions` files.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Applies every step, skipping rejected ones.
fn run(steps: &[StepSpec]) -> Props {
    let mut state = Props::default();
    for step in steps {
        let _ = state.apply_writes(writes(step));
    }
    state
}

// ---------------------------------------------------------------------------------
// Reference model of `apply_writes`, written from the documented semantics
// ---------------------------------------------------------------------------------

/// One channel's writes in a step, in writer order.
struct Gathered<T, U> {
    reduces: Vec<(usize, U)>,
    overwrites: Vec<(usize, T)>,
}

impl<T: Clone, U: Clone> Gathered<T, U> {
    fn of(
        updates: &[PropsUpdate],
        slot: impl Fn(&PropsUpdate) -> &Option<ChannelWrite<T, U>>,
    ) -> Self {
        let mut g = Self {
            reduces: Vec::new(),
            overwrites: Vec::new(),
        };
        for (i, u) in updates.iter().enumerate() {
            match slot(u) {
                Some(ChannelWrite::Reduce(v)) => g.reduces.push((i, v.clone())),
                Some(ChannelWrite::Overwrite(v)) => g.overwrites.push((i, v.clone())),
                None => {}
            }
        }
        g
    }

    /// Two overwrites, or (for a last-value channel) two writes of any kind, conflict.
    fn conflicts(
        &self,
        channel: &'static str,
        last_value: bool,
        names: &[&str],
    ) -> Result<(), InvalidUpdate> {
        if self.overwrites.len() > 1 {
            return Err(InvalidUpdate::ConcurrentOverwrites {
                channel,
                writers: self
                    .overwrites
                    .iter()
                    .map(|w| names[w.0].to_owned())
                    .collect(),
            });
        }
        if last_value && self.reduces.len() + self.overwrites.len() > 1 {
            let mut all: Vec<usize> = self.reduces.iter().map(|w| w.0).collect();
            all.extend(self.overwrites.iter().map(|w| w.0));
            all.sort_unstable();
            return Err(InvalidUpdate::ConcurrentWrites {
                channel,
                writers: all.into_iter().map(|i| names[i].to_owned()).collect(),
            });
        }
        Ok(())
    }

    /// The reduce writes, if they are what the step applies (no overwrite).
    fn reduced(&self) -> Option<Vec<U>> {
        (self.overwrites.is_empty() && !self.reduces.is_empty())
            .then(|| self.reduces.iter().map(|w| w.1.clone()).collect())
    }

    /// Applies the step's writes to `field`: an overwrite wins, else `fold` runs.
    fn commit(
        self,
        field: &mut T,
        index: usize,
        changes: &mut Vec<(usize, Change)>,
        fold: impl FnOnce(&mut T, Vec<U>) -> Change,
    ) {
        if let Some((_, v)) = self.overwrites.into_iter().next() {
            *field = v;
            changes.push((index, Change::Replaced));
        } else if !self.reduces.is_empty() {
            let change = fold(field, self.reduces.into_iter().map(|w| w.1).collect());
            changes.push((index, change));
        }
    }
}

fn rejected(channel: &'static str, source: ReduceError) -> InvalidUpdate {
    InvalidUpdate::Rejected { channel, source }
}

fn sum_checked<T: Copy>(start: T, items: &[T], add: fn(T, T) -> Option<T>) -> Option<T> {
    items.iter().try_fold(start, |acc, &x| add(acc, x))
}

/// The id the reducer gives a message without one: `msg-<n>` for the first `n` from
/// the list's length that is not taken.
fn fresh_id(list: &[Message]) -> String {
    (list.len()..)
        .map(|n| format!("msg-{n}"))
        .find(|id| list.iter().all(|m| m.id.as_deref() != Some(id.as_str())))
        .unwrap()
}

/// The `messages` fold, op by op. Returns `Appended` only when every op appended.
fn fold_chat(list: &mut Vec<Message>, ops: Vec<MessageOp<Message>>) -> Change {
    let from = list.len();
    let mut appended_only = true;
    for op in ops {
        match op {
            MessageOp::Upsert(mut m) => {
                let at =
                    m.id.as_deref()
                        .and_then(|id| list.iter().position(|x| x.id.as_deref() == Some(id)));
                if let Some(at) = at {
                    list[at] = m;
                    appended_only = false;
                } else {
                    if m.id.is_none() {
                        m.id = Some(fresh_id(list));
                    }
                    list.push(m);
                }
            }
            MessageOp::Remove(id) => {
                list.retain(|x| x.id.as_deref() != Some(id.as_str()));
                appended_only = false;
            }
            MessageOp::RemoveAll => {
                list.clear();
                appended_only = false;
            }
        }
    }
    if appended_only {
        Change::Appended { from }
    } else {
        Change::Replaced
    }
}

/// A remove must name a message that is in the list at that point of the step's
/// fold, including one whose id the reducer assigned earlier in the step (ids are
/// deterministic and documented, `msg-<n>`; `Reducer::check` must accept exactly
/// what `reduce` applies).
fn check_chat(list: &[Message], ops: &[MessageOp<Message>]) -> Result<(), ReduceError> {
    let mut scratch = list.to_vec();
    for op in ops {
        if let MessageOp::Remove(id) = op
            && !scratch.iter().any(|m| m.id.as_deref() == Some(id.as_str()))
        {
            return Err(ReduceError::UnknownMessageId { id: id.clone() });
        }
        fold_chat(&mut scratch, vec![op.clone()]);
    }
    Ok(())
}

fn append<T>(list: &mut Vec<T>, items: Vec<Vec<T>>) -> Change {
    let from = list.len();
    list.extend(items.into_iter().flatten());
    Change::Appended { from }
}

/// What `apply_writes` should do: the new state and the changes in channel order, or
/// the error of the first channel (in field order) that rejects the step.
fn model_apply(
    state: &Props,
    step: &[WriteSpec],
) -> Result<(Props, Vec<(usize, Change)>), InvalidUpdate> {
    let names: Vec<&str> = step.iter().map(|w| w.0).collect();
    let updates: Vec<PropsUpdate> = step.iter().map(|w| build(&w.1)).collect();
    let topic = Gathered::of(&updates, |u| &u.topic);
    let notes = Gathered::of(&updates, |u| &u.notes);
    let events = Gathered::of(&updates, |u| &u.events);
    let total = Gathered::of(&updates, |u| &u.total);
    let count = Gathered::of(&updates, |u| &u.count);
    let scores = Gathered::of(&updates, |u| &u.scores);
    let tags = Gathered::of(&updates, |u| &u.tags);
    let chat = Gathered::of(&updates, |u| &u.chat);
    let trail = Gathered::of(&updates, |u| &u.trail);
    let best = Gathered::of(&updates, |u| &u.best);
    let lens = Gathered::of(&updates, |u| &u.lens);
    let scratch = Gathered::of(&updates, |u| &u.scratch);
    let cache = Gathered::of(&updates, |u| &u.cache);

    topic.conflicts("topic", true, &names)?;
    notes.conflicts("notes", false, &names)?;
    events.conflicts("events", false, &names)?;
    total.conflicts("total", false, &names)?;
    if let Some(adds) = total.reduced() {
        sum_checked(state.total, &adds, i64::checked_add)
            .ok_or_else(|| rejected("total", ReduceError::Overflow))?;
    }
    count.conflicts("count", false, &names)?;
    if let Some(adds) = count.reduced() {
        sum_checked(state.count, &adds, u32::checked_add)
            .ok_or_else(|| rejected("count", ReduceError::Overflow))?;
    }
    scores.conflicts("scores", false, &names)?;
    tags.conflicts("tags", false, &names)?;
    chat.conflicts("chat", false, &names)?;
    if let Some(ops) = chat.reduced() {
        let ops: Vec<_> = ops.into_iter().flatten().collect();
        check_chat(&state.chat, &ops).map_err(|e| rejected("chat", e))?;
    }
    trail.conflicts("trail", false, &names)?;
    best.conflicts("best", false, &names)?;
    lens.conflicts("lens", false, &names)?;
    scratch.conflicts("scratch", true, &names)?;
    cache.conflicts("cache", false, &names)?;

    let mut s = state.clone();
    let mut ch = Vec::new();
    topic.commit(&mut s.topic, 0, &mut ch, |f, mut us| {
        *f = us.pop().unwrap();
        Change::Replaced
    });
    notes.commit(&mut s.notes, 1, &mut ch, append);
    events.commit(&mut s.events, 2, &mut ch, |f, us| {
        let from = f.len();
        f.extend(us.into_iter().flatten());
        Change::Appended { from }
    });
    // Each partial sum fits: the check above ran them in the same order.
    total.commit(&mut s.total, 3, &mut ch, |f, us| {
        *f = us.iter().fold(*f, |acc, x| acc + x);
        Change::Replaced
    });
    count.commit(&mut s.count, 4, &mut ch, |f, us| {
        *f = us.iter().fold(*f, |acc, x| acc + x);
        Change::Replaced
    });
    scores.commit(&mut s.scores, 5, &mut ch, |f, us| {
        f.extend(us.into_iter().flatten());
        Change::Replaced
    });
    tags.commit(&mut s.tags, 6, &mut ch, |f, us| {
        f.extend(us.into_iter().flatten());
        Change::Replaced
    });
    chat.commit(&mut s.chat, 7, &mut ch, |f, us| {
        fold_chat(f, us.into_iter().flatten().collect())
    });
    trail.commit(&mut s.trail, 8, &mut ch, |f, us| {
        us.iter().for_each(|u| f.push_str(u));
        Change::Replaced
    });
    best.commit(&mut s.best, 9, &mut ch, |f, us| {
        *f = us.into_iter().fold(*f, i64::max);
        Change::Replaced
    });
    lens.commit(&mut s.lens, 10, &mut ch, |f, us| {
        f.extend(us.iter().map(|u| u.chars().count()));
        Change::Replaced
    });
    scratch.commit(&mut s.scratch, 11, &mut ch, |f, mut us| {
        *f = us.pop().unwrap();
        Change::Replaced
    });
    cache.commit(&mut s.cache, 12, &mut ch, append);
    Ok((s, ch))
}

// ---------------------------------------------------------------------------------
// Checkpoint simulation
// ---------------------------------------------------------------------------------

/// One stored channel of a checkpoint.
#[derive(Clone, Debug)]
enum Record {
    Full(usize, Value),
    Delta(usize, Value),
}

/// Round-trips through JSON text, as a checkpoint store would.
fn stored(value: &Value) -> Value {
    serde_json::from_str(&serde_json::to_string(value).unwrap()).unwrap()
}

/// What a checkpoint of `changes` stores: a delta for an appended delta channel,
/// else the whole value; untracked channels are not stored.
fn checkpoint(live: &Props, changes: &ChangeSet) -> Result<Vec<Record>, TestCaseError> {
    let mut out = Vec::new();
    for (i, change) in changes.iter() {
        let info = &Props::CHANNELS[i];
        if info.persistence == Persistence::Untracked {
            prop_assert!(live.encode_channel(i)?.is_none());
            prop_assert!(!info.delta && live.channel_len(i).is_none());
            continue;
        }
        match change {
            Change::Appended { from } => {
                prop_assert!(info.delta, "`{}` is not a delta channel", info.name);
                prop_assert!(from <= live.channel_len(i).unwrap());
                out.push(Record::Delta(
                    i,
                    stored(&live.encode_channel_since(i, from)?),
                ));
            }
            Change::Replaced => {
                let value = live.encode_channel(i)?.unwrap();
                out.push(Record::Full(i, stored(&value)));
            }
        }
    }
    Ok(out)
}

fn restore_into(state: &mut Props, records: &[Record]) -> Result<(), TestCaseError> {
    for record in records {
        match record {
            Record::Full(i, v) => state.decode_channel(*i, v.clone())?,
            Record::Delta(i, v) => state.extend_channel(*i, v.clone())?,
        }
    }
    Ok(())
}

/// Restores from every channel's full encoding.
fn full_restore(live: &Props) -> Result<Props, TestCaseError> {
    let mut out = Props::default();
    for c in Props::CHANNELS {
        match live.encode_channel(c.index)? {
            Some(v) => {
                prop_assert_eq!(c.persistence, Persistence::Checkpointed);
                out.decode_channel(c.index, stored(&v))?;
            }
            None => prop_assert_eq!(c.persistence, Persistence::Untracked),
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config())]

    /// The same steps give the same states, change sets and errors; a rejected step
    /// changes nothing; and every outcome is what the reference model predicts.
    #[test]
    fn apply_is_deterministic_atomic_and_matches_the_model(steps in steps()) {
        let mut a = Props::default();
        let mut b = Props::default();
        for (n, step) in steps.iter().enumerate() {
            let before = a.clone();
            let ra = a.apply_writes(writes(step));
            let rb = b.apply_writes(writes(step));
            prop_assert_eq!(&ra, &rb, "step {}: results differ", n);
            prop_assert_eq!(&a, &b, "step {}: states differ", n);

            let expected = model_apply(&before, step);
            match (&ra, expected) {
                (Ok(changes), Ok((state, model_changes))) => {
                    prop_assert_eq!(&a, &state, "step {}: state differs from the model", n);
                    let got: Vec<_> = changes.iter().collect();
                    prop_assert_eq!(got, model_changes, "step {}: changes differ from the model", n);
                    prop_assert_eq!(changes.len(), changes.iter().count());
                }
                (Err(err), Err(model_err)) => {
                    prop_assert_eq!(err, &model_err, "step {}: error differs from the model", n);
                    prop_assert_eq!(&a, &before, "step {}: a rejected step changed the state", n);
                }
                (got, model) => {
                    return Err(TestCaseError::fail(format!(
                        "step {n}: got {got:?}, the model says {model:?}"
                    )));
                }
            }
        }
    }

    /// Encoding every channel and decoding into a default state restores the tracked
    /// channels; untracked ones stay `Default`.
    #[test]
    fn channels_round_trip_through_their_codecs(steps in steps(), last in step()) {
        let mut state = run(&steps);
        // Make the untracked channels non-default when the step allows it.
        let _ = state.apply_writes(vec![Write::new(
            "untracked",
            Props::update().scratch(Some(7)).cache([1, 2]),
        )]);
        let _ = state.apply_writes(writes(&last));
        let restored = full_restore(&state)?;
        prop_assert_eq!(&restored, &tracked_part(&state));
        // Decoding is idempotent: a second pass over a non-default state is the same.
        let mut again = restored.clone();
        for c in Props::CHANNELS {
            if let Some(v) = state.encode_channel(c.index)? {
                again.decode_channel(c.index, v)?;
            }
        }
        prop_assert_eq!(again, restored);
    }

    /// `encode_update` / `decode_update` (and serde on the update type, which
    /// delegates to them) round-trip an update, dropping only untracked writes; the
    /// decoded update applies exactly like the original.
    #[test]
    fn updates_round_trip_through_json(prior in steps(), spec in write_spec()) {
        let update = build(&spec.1);
        let json = Props::encode_update(&update)?;
        prop_assert_eq!(&serde_json::to_value(&update)?, &json);

        let back = Props::decode_update(stored(&json))?;
        let via_serde: PropsUpdate = serde_json::from_value(stored(&json))?;
        let mut tracked = update.clone();
        tracked.scratch = None;
        tracked.cache = None;
        prop_assert_eq!(format!("{back:?}"), format!("{tracked:?}"));
        prop_assert_eq!(format!("{via_serde:?}"), format!("{tracked:?}"));
        prop_assert_eq!(&Props::encode_update(&back)?, &json);

        let object = json.as_object().unwrap();
        for c in Props::CHANNELS {
            let stored_write = object.contains_key(c.name);
            prop_assert_eq!(back.writes_channel(c.index), stored_write);
            match c.persistence {
                Persistence::Checkpointed => {
                    prop_assert_eq!(update.writes_channel(c.index), stored_write);
                }
                Persistence::Untracked => prop_assert!(!stored_write),
            }
        }
        prop_assert_eq!(back.is_empty(), object.is_empty());

        let base = run(&prior);
        let mut x = base.clone();
        let mut y = base;
        let rx = x.apply_writes(vec![Write::new(spec.0, tracked)]);
        let ry = y.apply_writes(vec![Write::new(spec.0, back)]);
        prop_assert_eq!(rx, ry);
        prop_assert_eq!(x, y);
    }

    /// Checkpoints storing deltas for appended `append`/`messages` channels restore
    /// the same state as full encodings, after every step, whether each step is its
    /// own checkpoint or several steps' changes are merged into one.
    #[test]
    fn delta_checkpoints_restore_like_full_ones(
        steps in steps(),
        flush in prop::collection::vec(any::<bool>(), 8),
    ) {
        let mut live = Props::default();
        let mut per_step = Vec::new();
        let mut per_step_state = Props::default();
        let mut batched = Props::default();
        let mut pending = ChangeSet::new();
        for (n, step) in steps.iter().enumerate() {
            let before = live.clone();
            let Ok(changes) = live.apply_writes(writes(step)) else { continue };
            // An `Appended { from }` claim: the first `from` items are untouched.
            for (i, change) in changes.iter() {
                if let Change::Appended { from } = change {
                    if let Some(len) = before.channel_len(i) {
                        prop_assert_eq!(from, len);
                    }
                    if let (Some(old), Some(new)) = (before.encode_channel(i)?, live.encode_channel(i)?) {
                        let new_prefix = &new.as_array().unwrap()[..from];
                        prop_assert_eq!(old.as_array().unwrap().as_slice(), new_prefix);
                    }
                }
            }
            let records = checkpoint(&live, &changes)?;
            restore_into(&mut per_step_state, &records)?;
            per_step.extend(records);
            prop_assert_eq!(&per_step_state, &tracked_part(&live), "after step {}", n);

            pending.merge(&changes);
            if flush[n] {
                restore_into(&mut batched, &checkpoint(&live, &pending)?)?;
                pending = ChangeSet::new();
                prop_assert_eq!(&batched, &tracked_part(&live), "batched, after step {}", n);
            }
        }
        restore_into(&mut batched, &checkpoint(&live, &pending)?)?;

        let full = full_restore(&live)?;
        let mut folded = Props::default();
        restore_into(&mut folded, &per_step)?;
        prop_assert_eq!(&folded, &full);
        prop_assert_eq!(&batched, &full);
        prop_assert_eq!(&full, &tracked_part(&live));
    }
}

/// The strategies reach every outcome the properties reason about, so the properties
/// cannot pass vacuously.
#[test]
fn strategies_reach_every_outcome() {
    let mut runner = TestRunner::deterministic();
    let strategy = steps();
    let mut seen = BTreeSet::new();
    for _ in 0..500 {
        let sequence = strategy.new_tree(&mut runner).unwrap().current();
        let mut state = Props::default();
        for step in &sequence {
            match state.apply_writes(writes(step)) {
                Ok(changes) => {
                    seen.insert("ok");
                    for (i, change) in changes.iter() {
                        match (Props::CHANNELS[i].name, change) {
                            ("notes", Change::Appended { from }) if from > 0 => {
                                seen.insert("notes appended")
                            }
                            ("events", Change::Appended { from }) if from > 0 => {
                                seen.insert("events appended")
                            }
                            ("chat", Change::Appended { from }) if from > 0 => {
                                seen.insert("chat appended")
                            }
                            ("chat", Change::Replaced) => seen.insert("chat replaced"),
                            _ => false,
                        };
                    }
                }
                Err(InvalidUpdate::ConcurrentWrites { .. }) => {
                    seen.insert("concurrent writes");
                }
                Err(InvalidUpdate::ConcurrentOverwrites { .. }) => {
                    seen.insert("concurrent overwrites");
                }
                Err(InvalidUpdate::Rejected {
                    source: ReduceError::Overflow,
                    ..
                }) => {
                    seen.insert("overflow");
                }
                Err(InvalidUpdate::Rejected {
                    source: ReduceError::UnknownMessageId { .. },
                    ..
                }) => {
                    seen.insert("unknown message id");
                }
                Err(other) => panic!("unexpected error {other:?}"),
            }
        }
    }
    let all = [
        "ok",
        "notes appended",
        "events appended",
        "chat appended",
        "chat replaced",
        "concurrent writes",
        "concurrent overwrites",
        "overflow",
        "unknown message id",
    ];
    for outcome in all {
        assert!(seen.contains(outcome), "never reached: {outcome}");
    }
}

/// The minimal case the model property finds: a message without an id gets `msg-0`
/// from the reducer, and a later op of the same step removes `msg-0`. Folding the ops
/// in order removes it, but the step is rejected with `UnknownMessageId`.
#[test]
fn a_step_can_remove_an_id_the_reducer_assigned_earlier_in_it() {
    let mut s = Props::default();
    let result = s.apply_writes(vec![Write::new(
        "a",
        Props::update()
            .chat([Message::user("hi")])
            .chat([RemoveMessage::new("msg-0")]),
    )]);
    assert_eq!(
        result.map(|c| c.change_at(Props::CHAT.index())),
        Ok(Some(Change::Replaced))
    );
    assert!(s.chat.is_empty());
}
