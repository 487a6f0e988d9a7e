//! Single-valued chains: the offline rule that orders the values of one
//! single-valued predicate of one subject (where Alice works, where she lives) —
//! or of one state its observations name (whether she is married, her job title:
//! [`crate::facts::state`]) — and decides which replaces which.
//!
//! The outcome is a function of the set of values and their testimony alone.
//! Every time testimony about a chain lands, the whole chain is decided again
//! from its facts' own windows (before any supersession capped them) and their
//! current supporting claims, and only the differences are written. So the order
//! in which testimony arrives — a document about last year ingested after this
//! year's, a run killed and resumed with its units in another order — never
//! changes which value is current, which closed when, or which stand in a
//! contradiction group.
//!
//! The rules, in chain order. A value is placed by its latest testimony: that
//! claim's world-time start, else when it was said ("still working at Lucerne"
//! said in 2023 places Lucerne in 2023, after a job taken in 2022); turns of one
//! conversation said at one time keep their order.
//!
//! * a value whose own window ended before the next one starts has simply ended;
//! * another value placed later **supersedes** every live rival value: their
//!   windows close where the new value is first known to hold after they began
//!   ([`RULE_LATER_VALUE`]);
//! * two undated values said less than [`SAME_PERIOD_DAYS`] days apart by
//!   different sources, the later with no change cue, are about the same time:
//!   they **contradict** and both stand in one group ([`RULE_SAME_PERIOD`]);
//! * a dated change said after an undated value, and dated at most
//!   [`SAME_PERIOD_DAYS`] days before that value was said, is the newer report: it
//!   comes after the undated value and supersedes it at its own start
//!   ([`RULE_LATER_REPORT`]);
//! * two values with the same start: a change cue supersedes
//!   ([`RULE_CHANGE_CUE`]), another source contradicts, one source listing two
//!   values keeps both;
//! * a value only ever reported as past ("previously she lived in Lyon") is
//!   history: it never replaces a value, and the value live when it was said
//!   replaces it ([`RULE_PAST_REPORT`]); past-tense testimony never renews a value
//!   that present-tense testimony places;
//! * a value with no current testimony takes no part: it is left unlinked.

use crate::claims::{Precision, ValidityKind};
use crate::facts::Window;
#[cfg(doc)]
use crate::facts::adjudicate::reports_past_state;
use crate::facts::adjudicate::{
    RULE_CHANGE_CUE, RULE_LATER_REPORT, RULE_LATER_VALUE, RULE_PAST_REPORT, RULE_SAME_PERIOD,
    SAME_PERIOD_DAYS, Said, supersede_close,
};
use crate::ids::FactId;
use crate::time::Timestamp;

/// One fact of a chain as the rule reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct ChainFact {
    /// The fact.
    pub fact_id: FactId,
    /// Its value: the relation's object, or the state an observation names
    /// ([`crate::facts::state`]). Facts with the same value are one value.
    pub value: String,
    /// Its statement (orders values with the same start).
    pub statement: String,
    /// Its validity kind (a measurement for a period is never capped).
    pub validity_kind: ValidityKind,
    /// The window its testimony gives, before any supersession capped it.
    pub window: Window,
    /// Its current supporting testimony that reports the value as it is.
    pub said: Vec<Said>,
    /// Its current supporting testimony that reports the value as over
    /// ([`reports_past_state`]): it places a value nothing else places, and never
    /// renews it.
    pub past: Vec<Said>,
    /// Whether a current supporting claim (of `said`) carries a change cue.
    pub cue: bool,
}

/// What the rule decides for one fact of a chain.
#[derive(Clone, Debug, PartialEq)]
pub struct ChainState {
    /// Its window: its own, closed at its successor's start when superseded.
    pub window: Window,
    /// The fact that replaced it.
    pub superseded_by: Option<FactId>,
    /// The rule that closed it (with `superseded_by`) or grouped it.
    pub rule: Option<&'static str>,
    /// The contradiction group it stands in, named by the index (into the input)
    /// of the group's first member in chain order.
    pub group: Option<usize>,
}

/// The latest instant a window starting at `from` may mean: its end when it has
/// one, else the end of its start's calendar unit (`April 2024` may mean April 30).
pub fn latest_start(from: Timestamp, w: &Window) -> Timestamp {
    if let Some(until) = w.valid_until.filter(|u| *u > from) {
        return until;
    }
    let days = match w.precision {
        Precision::Day => 1,
        Precision::Month => 31,
        Precision::Quarter => 92,
        Precision::Year => 366,
        Precision::Instant | Precision::Open | Precision::Unknown => 0,
    };
    from + chrono::Duration::days(days)
}

/// A placed fact: its index, where it sorts, and where its value starts.
struct Placed {
    i: usize,
    /// The chain order: the start, or (a later report) the undated value it follows.
    key: Timestamp,
    /// Ordered after an undated value said before it ([`RULE_LATER_REPORT`]).
    late: bool,
    /// Where the value starts, as its latest testimony has it: that claim's
    /// world-time start, else when it was said.
    start: Timestamp,
    /// That testimony; `None` for a value only ever reported as past (history).
    placing: Option<Said>,
    /// Only ever reported as past, with no window of its own.
    history: bool,
}

/// Decide a chain: one [`ChainState`] per input fact, in input order. The input
/// order does not matter: the result depends on the facts alone.
pub fn rechain(facts: &[ChainFact]) -> Vec<ChainState> {
    let mut out: Vec<ChainState> = facts
        .iter()
        .map(|f| ChainState {
            window: f.window.clone(),
            superseded_by: None,
            rule: None,
            group: None,
        })
        .collect();
    // A testimony's time: the world-time start it gives, else when it was said.
    let time = |s: &Said| s.from.unwrap_or(s.at);
    let mut placed: Vec<Placed> = facts
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            // The latest testimony places a value ("still at Acme" renews it); turns
            // said at one time keep their order. Without current testimony a value
            // takes no part; testimony of it as past places it (when first said)
            // only when nothing else does.
            let placing = f.said.iter().max_by_key(|s| (time(s), s.turn)).copied();
            let (start, history) = match placing {
                Some(s) => (time(&s), false),
                None => {
                    let s = f.past.iter().min_by_key(|s| (s.at, s.turn))?;
                    (
                        f.window.valid_from.unwrap_or(s.at),
                        f.window.valid_from.is_none(),
                    )
                }
            };
            Some(Placed {
                i,
                key: start,
                late: false,
                start,
                placing,
                history,
            })
        })
        .collect();
    // Values whose latest testimony is undated ("still at Acme"): where that
    // places them (when it was said), and when and in which turn it was said.
    let undated: Vec<(Timestamp, (Timestamp, Option<u64>), usize)> = placed
        .iter()
        .filter_map(|p| {
            let s = p.placing.filter(|s| s.from.is_none())?;
            Some((p.start, (s.at, s.turn), p.i))
        })
        .collect();
    for p in &mut placed {
        let f = &facts[p.i];
        // A value placed by a dated claim, and when it was last reported.
        if p.placing.is_none_or(|s| s.from.is_none()) {
            continue;
        }
        let Some(reported) = f.said.iter().map(|s| (s.at, s.turn)).max() else {
            continue;
        };
        let from = p.start;
        let latest = latest_start(from, &f.window);
        for &(placed_at, said, u) in &undated {
            // "Still at Acme" on Monday (or in an earlier turn), then "I joined
            // Globex last week": the change is the newer report. A change dated
            // well before the undated value was said is history instead.
            if facts[u].value != f.value
                && placed_at > from
                && said < reported
                && (placed_at - latest).num_days() < SAME_PERIOD_DAYS
                && placed_at >= p.key
            {
                p.key = placed_at;
                p.late = true;
            }
        }
    }
    let turn = |p: &Placed| p.placing.and_then(|s| s.turn);
    placed.sort_by(|a, b| {
        (
            a.key,
            a.late,
            turn(a),
            &facts[a.i].statement,
            facts[a.i].fact_id,
        )
            .cmp(&(
                b.key,
                b.late,
                turn(b),
                &facts[b.i].statement,
                facts[b.i].fact_id,
            ))
    });
    // The values live so far, in chain order.
    let mut live: Vec<&Placed> = Vec::new();
    for p in &placed {
        let f = &facts[p.i];
        // A value whose own window ended by this start has simply ended.
        live.retain(|q| facts[q.i].window.valid_until.is_none_or(|u| u > p.start));
        let Some(rival) = live
            .iter()
            .rev()
            .find(|q| facts[q.i].value != f.value)
            .copied()
        else {
            // Nothing to compare with, or the same value again.
            live.push(p);
            continue;
        };
        let r = &facts[rival.i];
        if p.history {
            // Reported only as past: the value live when it was said replaced it.
            if let Some(w) = supersede_close(&f.window, f.validity_kind, Some(rival.start)) {
                out[p.i].window = w;
                out[p.i].superseded_by = Some(r.fact_id);
                out[p.i].rule = Some(RULE_PAST_REPORT);
            }
            continue;
        }
        let other_source = f
            .said
            .iter()
            .any(|s| r.said.iter().any(|t| t.document != s.document));
        let both_undated = f.window.valid_from.is_none() && r.window.valid_from.is_none();
        // Two turns of one conversation said at one time: the later turn is later.
        let later_turn = matches!(
            (p.placing, rival.placing),
            (Some(s), Some(t)) if s.document == t.document && s.turn.zip(t.turn).is_some_and(|(a, b)| a > b)
        );
        let contradicts = if p.key == rival.key && !p.late && !rival.late {
            !f.cue && other_source && !later_turn
        } else {
            !f.cue
                && both_undated
                && other_source
                && (p.key - rival.key).num_days().abs() < SAME_PERIOD_DAYS
        };
        if contradicts {
            let group = out[rival.i].group.unwrap_or(rival.i);
            out[rival.i].group = Some(group);
            out[p.i].group = Some(group);
            out[p.i].rule = Some(RULE_SAME_PERIOD);
            live.push(p);
            continue;
        }
        let later =
            p.key > rival.key || (p.key == rival.key && (p.late && !rival.late || later_turn));
        if !later && !f.cue {
            // One source listing two values for the same time: both stand.
            live.push(p);
            continue;
        }
        let rule = if p.late {
            RULE_LATER_REPORT
        } else if later {
            RULE_LATER_VALUE
        } else {
            RULE_CHANGE_CUE
        };
        let mut kept: Vec<&Placed> = Vec::new();
        for q in live.drain(..) {
            let prior = &facts[q.i];
            if prior.value == f.value {
                kept.push(q);
                continue;
            }
            // It closes where the new value is first known to hold after it began:
            // the earliest testimony of the new value after its start ("joined
            // Globex in March", then "works at Globex" in June: March); a later
            // report closes it at the reported start.
            let close = if p.late {
                p.start
            } else {
                f.said
                    .iter()
                    .map(time)
                    .filter(|t| *t > q.start)
                    .min()
                    .unwrap_or(p.start)
            };
            // Two values dated to one month, one said in a later turn: it closes
            // when the new value was reported, the one instant known to follow.
            let reported = f.said.iter().map(|s| s.at).max();
            let capped = supersede_close(&prior.window, prior.validity_kind, Some(close))
                .or_else(|| supersede_close(&prior.window, prior.validity_kind, reported));
            match capped {
                Some(w) => {
                    out[q.i].window = w;
                    out[q.i].superseded_by = Some(f.fact_id);
                    out[q.i].rule = Some(rule);
                }
                // Its window does not hold the new start (it begins there or after):
                // nothing to close, both stand.
                None => kept.push(q),
            }
        }
        live = kept;
        live.push(p);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{ClaimId, DocumentId};
    use chrono::TimeZone;
    use uuid::Uuid;

    fn ts(y: i32, m: u32, d: u32) -> Timestamp {
        chrono::Utc.with_ymd_and_hms(y, m, d, 0, 0, 0).unwrap()
    }

    fn said(at: Timestamp, doc: u128, claim: u128) -> Said {
        Said {
            claim: ClaimId(Uuid::from_u128(claim)),
            document: DocumentId(Uuid::from_u128(doc)),
            at,
            from: None,
            turn: None,
        }
    }

    /// A fact of value `object` (1 = Acme, 2 = Globex, 3 = Initech).
    fn value(id: u128, object: u128, from: Option<Timestamp>, said: Vec<Said>) -> ChainFact {
        let name = ["", "Acme", "Globex", "Initech"][object as usize];
        ChainFact {
            fact_id: FactId(Uuid::from_u128(id)),
            value: object.to_string(),
            statement: format!("Alice works for {name}."),
            validity_kind: ValidityKind::State,
            window: Window {
                valid_from: from,
                valid_until: None,
                precision: if from.is_some() {
                    Precision::Month
                } else {
                    Precision::Unknown
                },
            },
            // Its testimony gives its start.
            said: said.into_iter().map(|s| Said { from, ..s }).collect(),
            past: vec![],
            cue: false,
        }
    }

    fn fid(id: u128) -> Option<FactId> {
        Some(FactId(Uuid::from_u128(id)))
    }

    /// Every rotation and the reverse of `facts` decide the same, fact by fact.
    fn same_in_any_order(facts: &[ChainFact]) -> Vec<ChainState> {
        let expected = rechain(facts);
        let by_id = |facts: &[ChainFact], states: Vec<ChainState>| {
            let mut v: Vec<(FactId, ChainState)> =
                facts.iter().map(|f| f.fact_id).zip(states).collect();
            v.sort_by_key(|(id, _)| *id);
            // Groups are named by index: compare them by their members instead.
            v.into_iter()
                .map(|(id, s)| (id, s.window, s.superseded_by, s.rule, s.group.is_some()))
                .collect::<Vec<_>>()
        };
        let want = by_id(facts, expected.clone());
        let mut order: Vec<ChainFact> = facts.to_vec();
        for _ in 0..facts.len() {
            order.rotate_left(1);
            assert_eq!(by_id(&order, rechain(&order)), want);
        }
        order.reverse();
        assert_eq!(by_id(&order, rechain(&order)), want);
        expected
    }

    #[test]
    fn a_later_value_supersedes_in_any_arrival_order() {
        let facts = [
            value(1, 1, None, vec![said(ts(2023, 1, 10), 10, 1)]),
            value(2, 2, None, vec![said(ts(2024, 3, 1), 11, 2)]),
            value(3, 3, None, vec![said(ts(2025, 6, 1), 12, 3)]),
        ];
        let s = same_in_any_order(&facts);
        assert_eq!(s[0].superseded_by, fid(2));
        assert_eq!(s[0].window.valid_until, Some(ts(2024, 3, 1)));
        assert_eq!(s[0].rule, Some(RULE_LATER_VALUE));
        assert_eq!(s[1].superseded_by, fid(3));
        assert_eq!(s[1].window.valid_until, Some(ts(2025, 6, 1)));
        assert_eq!(s[2].superseded_by, None);
        assert_eq!(s[2].window.valid_until, None);
    }

    #[test]
    fn a_dated_start_beats_the_said_at_time() {
        // Globex said in 2023 to have started in 2021; Acme said (undated) in 2022.
        let facts = [
            value(1, 1, None, vec![said(ts(2022, 5, 1), 10, 1)]),
            value(
                2,
                2,
                Some(ts(2021, 1, 1)),
                vec![said(ts(2023, 1, 1), 11, 2)],
            ),
        ];
        let s = same_in_any_order(&facts);
        // Globex started first: Acme (2022) replaced it.
        assert_eq!(s[1].superseded_by, fid(1));
        assert_eq!(s[1].window.valid_until, Some(ts(2022, 5, 1)));
        assert_eq!(s[0].superseded_by, None);
    }

    #[test]
    fn a_change_reported_after_an_undated_value_replaces_it() {
        // "Still at Acme" on 5 March, "joined Globex in February" on 10 March.
        let facts = [
            value(1, 1, None, vec![said(ts(2026, 3, 5), 10, 1)]),
            value(
                2,
                2,
                Some(ts(2026, 2, 1)),
                vec![said(ts(2026, 3, 10), 11, 2)],
            ),
        ];
        let s = same_in_any_order(&facts);
        assert_eq!(s[0].superseded_by, fid(2));
        assert_eq!(s[0].rule, Some(RULE_LATER_REPORT));
        assert_eq!(s[0].window.valid_until, Some(ts(2026, 2, 1)));
        assert_eq!(s[1].superseded_by, None);
        // Not when the undated value was said after the report ...
        let after = [
            value(1, 1, None, vec![said(ts(2026, 3, 12), 10, 1)]),
            facts[1].clone(),
        ];
        let s = same_in_any_order(&after);
        assert_eq!(s[1].superseded_by, fid(1));
        assert_eq!(s[0].superseded_by, None);
        // ... nor when the change is dated well before it (history).
        let history = [
            facts[0].clone(),
            value(
                2,
                2,
                Some(ts(2025, 6, 1)),
                vec![said(ts(2026, 3, 10), 11, 2)],
            ),
        ];
        let s = same_in_any_order(&history);
        assert_eq!(s[1].superseded_by, fid(1));
        assert_eq!(s[1].window.valid_until, Some(ts(2026, 3, 5)));
    }

    #[test]
    fn undated_values_from_two_sources_in_the_same_weeks_contradict() {
        let facts = [
            value(1, 1, None, vec![said(ts(2026, 2, 18), 10, 1)]),
            value(2, 2, None, vec![said(ts(2026, 3, 10), 11, 2)]),
        ];
        let s = same_in_any_order(&facts);
        assert!(s[0].group.is_some() && s[0].group == s[1].group);
        assert_eq!(s[0].superseded_by, None);
        assert_eq!(s[1].superseded_by, None);
        assert_eq!(s[1].rule, Some(RULE_SAME_PERIOD));
        // A change cue supersedes instead.
        let mut cued = facts.clone();
        cued[1].cue = true;
        let s = same_in_any_order(&cued);
        assert_eq!(s[0].group, None);
        assert_eq!(s[0].superseded_by, fid(2));
        // One source saying both: no contradiction, the later replaces.
        let one = [
            value(1, 1, None, vec![said(ts(2026, 2, 18), 10, 1)]),
            value(2, 2, None, vec![said(ts(2026, 3, 10), 10, 2)]),
        ];
        let s = same_in_any_order(&one);
        assert_eq!(s[0].group, None);
        assert_eq!(s[0].superseded_by, fid(2));
        // A later value replaces both members of a group.
        let mut three = facts.to_vec();
        three.push(value(3, 3, None, vec![said(ts(2026, 9, 1), 12, 3)]));
        let s = same_in_any_order(&three);
        assert_eq!(s[0].superseded_by, fid(3));
        assert_eq!(s[1].superseded_by, fid(3));
        assert!(s[0].group.is_some());
    }

    #[test]
    fn the_same_time_from_one_source_keeps_both_and_a_cue_decides() {
        let at = ts(2026, 3, 10);
        let facts = [
            value(1, 1, None, vec![said(at, 10, 1)]),
            value(2, 2, None, vec![said(at, 10, 2)]),
        ];
        let s = same_in_any_order(&facts);
        assert!(
            s.iter()
                .all(|s| s.superseded_by.is_none() && s.group.is_none())
        );
        let other = [
            value(1, 1, None, vec![said(at, 10, 1)]),
            value(2, 2, None, vec![said(at, 11, 2)]),
        ];
        let s = same_in_any_order(&other);
        assert!(s[0].group.is_some() && s[0].group == s[1].group);
    }

    #[test]
    fn the_same_value_again_keeps_it_current_and_ended_values_are_history() {
        // Acme, then Globex, then Acme again (another statement of the same value).
        let mut again = value(3, 1, None, vec![said(ts(2025, 1, 1), 12, 3)]);
        again.statement = "Alice is working at Acme.".into();
        let facts = [
            value(1, 1, None, vec![said(ts(2023, 1, 1), 10, 1)]),
            value(2, 2, None, vec![said(ts(2024, 1, 1), 11, 2)]),
            again,
        ];
        let s = same_in_any_order(&facts);
        assert_eq!(s[0].superseded_by, fid(2));
        assert_eq!(s[1].superseded_by, fid(3));
        assert_eq!(s[2].superseded_by, None);
        // A value whose window ended before the next began is not superseded.
        let mut ended = value(
            1,
            1,
            Some(ts(2019, 1, 1)),
            vec![said(ts(2023, 1, 1), 10, 1)],
        );
        ended.window.valid_until = Some(ts(2021, 1, 1));
        let facts = [
            ended,
            value(
                2,
                2,
                Some(ts(2022, 1, 1)),
                vec![said(ts(2023, 1, 1), 10, 2)],
            ),
        ];
        let s = same_in_any_order(&facts);
        assert_eq!(s[0].superseded_by, None);
        assert_eq!(s[0].window.valid_until, Some(ts(2021, 1, 1)));
    }

    #[test]
    fn a_value_without_current_testimony_takes_no_part() {
        let facts = [
            value(1, 1, None, vec![said(ts(2023, 1, 1), 10, 1)]),
            value(2, 2, Some(ts(2024, 1, 1)), vec![]),
        ];
        let s = same_in_any_order(&facts);
        assert!(s.iter().all(|s| s.superseded_by.is_none()));
        assert_eq!(s[1].window, facts[1].window);
    }

    #[test]
    fn a_value_reported_as_past_is_history() {
        // Lyon said as current in 2024 and as past ("previously she lived in Lyon")
        // in September 2025, with a move to Marseille dated August 2025.
        let mut lyon = value(1, 1, None, vec![said(ts(2024, 3, 1), 10, 1)]);
        lyon.past = vec![said(ts(2025, 9, 5), 11, 3)];
        let marseille = value(
            2,
            2,
            Some(ts(2025, 8, 1)),
            vec![said(ts(2025, 9, 5), 11, 2)],
        );
        let s = same_in_any_order(&[lyon, marseille]);
        assert_eq!(s[0].superseded_by, fid(2));
        assert_eq!(s[0].window.valid_until, Some(ts(2025, 8, 1)));
        assert_eq!(s[1].superseded_by, None);
        // Only ever said as past: the value live when it was said replaced it,
        // however late it was said, and it replaces nothing.
        let mut acme = value(3, 3, None, vec![]);
        acme.past = vec![said(ts(2026, 1, 1), 12, 4)];
        let globex = value(4, 2, None, vec![said(ts(2025, 1, 1), 10, 5)]);
        let s = same_in_any_order(&[acme, globex]);
        assert_eq!(s[0].superseded_by, fid(4));
        assert_eq!(s[0].rule, Some(RULE_PAST_REPORT));
        assert_eq!(s[1].superseded_by, None);
    }

    #[test]
    fn the_latest_testimony_places_a_value_and_turns_keep_their_order() {
        // Lucerne from February 2022, Oscorp from May 2022, then "still working
        // at Lucerne" said in September 2023: Lucerne is current again.
        let mut lucerne = value(
            1,
            1,
            Some(ts(2022, 2, 1)),
            vec![said(ts(2022, 2, 20), 10, 1)],
        );
        lucerne.said.push(said(ts(2023, 9, 1), 11, 2));
        let oscorp = value(
            2,
            2,
            Some(ts(2022, 5, 1)),
            vec![said(ts(2022, 5, 20), 12, 3)],
        );
        let s = same_in_any_order(&[lucerne, oscorp]);
        assert_eq!(s[1].superseded_by, fid(1));
        assert_eq!(s[1].window.valid_until, Some(ts(2023, 9, 1)));
        assert_eq!(s[0].superseded_by, None);
        // A value renewed later closes its predecessor where it began after it.
        let acme = value(3, 3, None, vec![said(ts(2024, 1, 10), 13, 4)]);
        let mut globex = value(
            4,
            2,
            Some(ts(2024, 3, 1)),
            vec![said(ts(2024, 4, 1), 14, 5)],
        );
        globex.said.push(said(ts(2024, 6, 1), 15, 6));
        let s = same_in_any_order(&[acme, globex]);
        assert_eq!(s[0].superseded_by, fid(4));
        assert_eq!(s[0].window.valid_until, Some(ts(2024, 3, 1)));
        // Two turns of one session share its time: the later turn is later.
        let at = ts(2023, 1, 21);
        let turn = |t: u64, claim| Said {
            turn: Some(t),
            ..said(at, 10, claim)
        };
        let facts = [
            value(1, 1, None, vec![turn(900, 1)]),
            value(2, 2, None, vec![turn(100, 2)]),
        ];
        let s = same_in_any_order(&facts);
        assert_eq!(s[1].superseded_by, fid(1));
        assert!(s.iter().all(|s| s.group.is_none()));
    }

    #[test]
    fn turns_of_one_session_order_a_change_and_a_renewal() {
        let at = ts(2025, 6, 13);
        let turn = |t: u64, claim, from: Option<Timestamp>| Said {
            turn: Some(t),
            from,
            ..said(at, 10, claim)
        };
        // Umbrella since March (another session), "still working at Umbrella" in
        // turn 2, "left Umbrella and joined Lucerne in June" in turn 7.
        let mut umbrella = value(
            1,
            1,
            Some(ts(2025, 3, 24)),
            vec![said(ts(2025, 4, 5), 9, 1)],
        );
        umbrella.said.push(turn(200, 2, None));
        let lucerne = value(2, 2, Some(ts(2025, 6, 1)), vec![turn(700, 3, None)]);
        let s = same_in_any_order(&[umbrella, lucerne]);
        assert_eq!(s[0].superseded_by, fid(2));
        assert_eq!(s[0].rule, Some(RULE_LATER_REPORT));
        assert_eq!(s[0].window.valid_until, Some(ts(2025, 6, 1)));
        // Two moves dated to one month, in turns 8 and 12: the later turn is
        // current, and the earlier closes when the later was reported.
        let chennai = value(3, 3, Some(ts(2024, 3, 1)), vec![turn(800, 4, None)]);
        let tallinn = value(4, 2, Some(ts(2024, 3, 1)), vec![turn(1200, 5, None)]);
        let s = same_in_any_order(&[chennai, tallinn]);
        assert_eq!(s[0].superseded_by, fid(4));
        assert_eq!(s[0].window.valid_until, Some(at));
        assert_eq!(s[1].superseded_by, None);
    }
}
