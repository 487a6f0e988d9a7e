//! A deterministic synthetic corpus for the `scale` command: a cast of recurring
//! people, organisations and places; conversations (sessions of 10–30 turns between
//! two or three of them) and short Markdown notes.
//!
//! The sentences are written in the shapes the offline pipeline turns into claims
//! and facts (see `rememberstack::internals::claims::offline` and `rememberstack::internals::facts`):
//!
//! * **relations** — first-person turns the extractor rewrites onto the speaker
//!   (`I'm working at Acme these days.` → `Alice Moreno is working at Acme these
//!   days.`) and third-person notes (`Alice Moreno works at Acme.`, `… lives in
//!   Oslo.`); the normalizer reads `works_for` and `located_in` from them;
//! * **changes over time** — a later session or note moves someone or changes their
//!   job (`I moved to Lisbon last month.`, `… left Acme and joined Globex in March
//!   2024.`), so a newer fact replaces an older one (each [`Person`] keeps their
//!   current employer and city, the ones they left, and whether a wrong directory
//!   entry contradicted the current one: the ground truth `knowledge` scores);
//! * **contradictions** — a directory note that disagrees with what its subject
//!   said (an unmarked wrong city or employer);
//! * **dated events** — absolute (`On 3 May 2023, Alice Moreno ran a marathon in
//!   Oslo.`) and relative to the turn time (`I ran a marathon in Oslo last
//!   Saturday.`); marriages (`I married Dan Okafor in 2019.`);
//! * **filler** — greetings, acknowledgements and questions, which Selection drops.
//!
//! Randomness comes from a seeded SplitMix64 generator in this module: the same seed
//! and cast size give a byte-identical stream of items.

use chrono::{DateTime, Datelike, Duration, TimeZone, Utc};
use rememberstack::{Conversation, Message};
use serde::Serialize;

/// SplitMix64 (Steele, Lea and Flood 2014): small, fast and good enough for a
/// synthetic corpus; not for anything cryptographic.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0), by multiply-shift (bias below 2^-32 for the
    /// sizes used here).
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "below(0)");
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }

    /// Shuffle in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, xs: &mut [T]) {
        for i in (1..xs.len()).rev() {
            let j = self.below(i + 1);
            xs.swap(i, j);
        }
    }
}

// First names avoid month and weekday names and words the extractor or the
// normalizer treat specially (`May`, `Will`, `Hope`, …).
#[rustfmt::skip]
const FIRST_NAMES: &[&str] = &[
    "Alice", "Bruno", "Carmen", "Dmitri", "Elena", "Farid", "Greta", "Hiro", "Ingrid", "Jonas",
    "Keiko", "Luis", "Maya", "Nadia", "Oscar", "Priya", "Quentin", "Rosa", "Samir", "Tomas",
    "Uma", "Viktor", "Wanda", "Xavier", "Yara", "Zoltan", "Amara", "Benedikt", "Chiara",
    "Darius", "Esther", "Felix", "Giulia", "Hamid", "Isabel", "Jakub", "Kamala", "Lars",
    "Mirela", "Nikos", "Olga", "Pedro", "Rania", "Stefan", "Tereza", "Ulrich", "Valentina",
    "Wei", "Ximena", "Yusuf", "Zainab", "Anouk", "Bjorn", "Camille", "Diego", "Emeka", "Fatima",
    "Gustav", "Hana", "Ivan",
];

#[rustfmt::skip]
const LAST_NAMES: &[&str] = &[
    "Moreno", "Okafor", "Lindqvist", "Tanaka", "Novak", "Haddad", "Petrov", "Silva", "Kowalski",
    "Nguyen", "Fischer", "Rossi", "Mensah", "Dubois", "Andersen", "Kaur", "Yilmaz", "Castillo",
    "Sato", "Horvat", "Ivanova", "Jensen", "Kimura", "Larsen", "Mahlangu", "Nakamura", "Oliveira",
    "Papadopoulos", "Quispe", "Rahman", "Schmidt", "Tshabalala", "Urquhart", "Varga", "Wojcik",
    "Xu", "Yamamoto", "Zhang", "Abadi", "Bergstrom", "Cohen", "Delgado", "Eriksen", "Ferreira",
    "Gallagher", "Hoffmann", "Ibrahim", "Jovanovic", "Kruger", "Lopez", "Murphy", "Nowak",
    "Osei", "Okonkwo", "Quintero", "Reyes", "Suzuki", "Torres", "Ueda", "Vogel", "Weber",
    "Yadav", "Zimmermann", "Achebe",
];

/// The organisations people work for.
#[rustfmt::skip]
pub const ORGS: &[&str] = &[
    "Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Soylent", "Cyberdyne",
    "Tyrell", "Wonka", "Aperture", "Monarch", "Pied Piper", "Stark Industries",
    "Wayne Enterprises", "Oscorp", "Massive Dynamic", "Dunder Mifflin", "Nakatomi",
    "Sterling Cooper", "Virtucon", "Wernham Hogg", "Northwind", "Contoso", "Fabrikam",
    "Tailspin", "Litware", "Adventure Works", "Blue Yonder", "Lucerne Publishing", "Proseware",
    "Trey Research", "Coho Vineyard", "Humongous Insurance", "Alpine Ski House", "Woodgrove Bank",
    "Relecloud", "VanArsdel", "Bellows College", "Southridge Video",
];

/// The places people live in.
#[rustfmt::skip]
pub const CITIES: &[&str] = &[
    "Lisbon", "Oslo", "Prague", "Boston", "Kyoto", "Nairobi", "Lima", "Porto", "Dublin",
    "Vienna", "Krakow", "Seville", "Montreal", "Melbourne", "Osaka", "Accra", "Bogota", "Hanoi",
    "Tbilisi", "Valencia", "Lyon", "Gdansk", "Bergen", "Tallinn", "Riga", "Ljubljana", "Zagreb",
    "Sofia", "Izmir", "Cairo", "Marrakesh", "Dakar", "Lagos", "Kigali", "Mumbai", "Pune",
    "Chennai", "Manila", "Seoul", "Busan", "Taipei", "Auckland", "Denver", "Austin", "Portland",
    "Toronto", "Quito", "Santiago", "Rosario", "Cusco",
];

const HOBBIES: &[&str] = &[
    "pottery",
    "the cello",
    "sourdough",
    "climbing",
    "chess",
    "birdwatching",
    "salsa dancing",
    "woodworking",
    "trail running",
    "watercolors",
    "sailing",
    "beekeeping",
];

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Dated events: (past tense, infinitive) phrases. Each past tense is a form the
/// extractor's first-person rewrite accepts (an irregular past it lists, or `-ed`).
const EVENTS: &[(&str, &str)] = &[
    ("ran a marathon", "run a marathon"),
    ("won a chess tournament", "win a chess tournament"),
    ("adopted a dog", "adopt a dog"),
    ("bought a house", "buy a house"),
    ("played a concert", "play a concert"),
    ("finished a cooking course", "finish a cooking course"),
];

const RELATIVE_DAYS: &[(&str, i64)] = &[
    ("yesterday", 1),
    ("two days ago", 2),
    ("three days ago", 3),
    ("last week", 7),
    ("two weeks ago", 14),
];

const FILLER: &[&str] = &[
    "Haha, nice!",
    "Oh wow.",
    "That's great to hear!",
    "Thanks!",
    "Sounds good.",
    "Good morning!",
    "See you later!",
    "Take care!",
    "Cool, cool.",
    "Aww, that's so nice.",
    "Congrats!",
    "Okay!",
];

// Parts of the prose that lengthens turns (`Generator::long_turns`).
const PROSE_OPENERS: &[&str] = &[
    "",
    "",
    "",
    "honestly,",
    "to be fair,",
    "the thing is,",
    "looking back,",
    "in any case,",
    "funny enough,",
    "as far as I remember,",
    "between us,",
];
const PROSE_PLACES: &[&str] = &[
    "bakery",
    "market",
    "harbour",
    "museum",
    "library",
    "station",
    "park",
    "bookshop",
    "old bridge",
    "river",
    "cafe",
    "gallery",
    "square",
    "train yard",
    "night market",
];
const PROSE_COMPARATIVES: &[&str] = &[
    "busier",
    "quieter",
    "smaller",
    "more expensive",
    "cheaper",
    "louder",
    "calmer",
    "more crowded",
    "friendlier",
    "colder",
];
const PROSE_PERIODS: &[&str] = &[
    "weekend",
    "morning",
    "evening",
    "holiday",
    "long weekend",
    "afternoon",
    "rainy week",
];
const PROSE_GERUNDS: &[&str] = &[
    "reading",
    "cooking",
    "cleaning the flat",
    "walking by the water",
    "sorting old photos",
    "fixing the bike",
    "writing letters",
    "repotting plants",
    "baking bread",
    "planning trips",
    "watching old films",
    "learning new recipes",
];
const PROSE_TOPICS: &[&str] = &[
    "the weather",
    "old friends",
    "work",
    "school",
    "music",
    "the news",
    "travel",
    "money",
    "cooking",
    "family holidays",
    "the neighbourhood",
    "sports",
    "books we loved as kids",
];
const PROSE_RELATIVES: &[&str] = &[
    "mother",
    "father",
    "brother",
    "sister",
    "aunt",
    "uncle",
    "grandmother",
    "cousin",
];
const PROSE_VERBS: &[&str] = &[
    "rest",
    "travel",
    "call home",
    "cook",
    "exercise",
    "read",
    "slow down",
    "write",
    "paint",
    "go outside",
    "sleep early",
];
const PROSE_THINGS: &[&str] = &[
    "pastries",
    "soup",
    "coffee",
    "maps",
    "postcards",
    "flowers",
    "old records",
    "spices",
    "dumplings",
    "tea",
    "second-hand books",
    "fresh bread",
    "ceramics",
];
const PROSE_UNITS: &[&str] = &["hours", "days", "weeks", "evenings", "attempts"];
const PROSE_FEELINGS: &[&str] = &[
    "worth it",
    "exhausting",
    "relaxing",
    "strange",
    "wonderful",
    "a bit silly",
    "surprisingly easy",
    "harder than it looks",
    "oddly satisfying",
];

const GENERIC_QUESTIONS: &[&str] = &[
    "How are you doing?",
    "What have you been up to?",
    "How was your weekend?",
    "Any plans for the holidays?",
    "Did you get my message?",
];

const MEETING_LINES: &[&str] = &[
    "The team reviewed the roadmap and agreed to revisit the budget next quarter.",
    "Most of the agenda moved to the next meeting because the demo ran long.",
    "Everyone agreed that the onboarding guide needs a clearer first page.",
    "The office plants were watered and the kitchen rota was updated.",
    "Nobody objected to moving the weekly sync to the afternoon.",
];

/// One person of the cast, with what is currently true of them.
#[derive(Clone, Debug)]
pub struct Person {
    /// First name.
    pub first: &'static str,
    /// Family name.
    pub last: &'static str,
    /// Current employer (index into the organisations).
    pub employer: usize,
    /// Current city (index into the places).
    pub city: usize,
    /// Spouse (index into the cast), once married.
    pub spouse: Option<usize>,
    /// Dated events: (event index, date).
    pub events: Vec<(usize, DateTime<Utc>)>,
    /// Whether any item has named them yet.
    pub mentioned: bool,
    /// Whether their employer / city has been stated.
    pub stated_employer: bool,
    /// Whether their city has been stated.
    pub stated_city: bool,
    /// Employers they left, oldest first (what a stale answer names).
    pub former_employers: Vec<usize>,
    /// Cities they moved away from, oldest first.
    pub former_cities: Vec<usize>,
    /// Whether a directory entry named a wrong employer since their last job change
    /// (a contradiction the corpus leaves standing).
    pub contested_employer: bool,
    /// Whether a directory entry named a wrong city since their last move.
    pub contested_city: bool,
}

impl Person {
    /// `First Last`.
    pub fn name(&self) -> String {
        format!("{} {}", self.first, self.last)
    }
}

/// One generated source.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Item {
    /// One session of a conversation.
    Session {
        /// Lineage reference: `synth/c{conv}/s{session}`.
        source_ref: String,
        /// The session.
        conversation: Conversation,
    },
    /// A short Markdown note.
    Document {
        /// Lineage reference: `synth/d{n}`.
        source_ref: String,
        /// When it was written.
        source_time: DateTime<Utc>,
        /// The Markdown.
        text: String,
    },
}

/// What the generator has written so far, by shape.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Items generated.
    pub items: usize,
    /// Distinct conversations.
    pub conversations: usize,
    /// Sessions (one ingest each).
    pub sessions: usize,
    /// Conversation turns.
    pub turns: usize,
    /// Notes (Markdown documents; each session is a document too).
    pub notes: usize,
    /// Employer / city statements that agree with the current truth.
    pub relations: usize,
    /// Moves and job changes (a later statement replaces an earlier one).
    pub changes: usize,
    /// Statements that disagree with the current truth (a wrong directory entry).
    pub contradictions: usize,
    /// Dated events (absolute or relative dates).
    pub dated_events: usize,
    /// Marriages.
    pub marriages: usize,
    /// Other first-person statements (hobbies, family).
    pub plain_statements: usize,
    /// Questions.
    pub questions: usize,
    /// Greetings and acknowledgements.
    pub filler: usize,
    /// Meeting-note lines without names.
    pub meeting_lines: usize,
    /// Bytes of text generated: conversation turns and note bodies.
    pub text_bytes: usize,
    /// Sentences of prose added to lengthen turns (`long_turns`).
    pub prose_sentences: usize,
}

/// A benchmark question about the cast and the name `resolve_entity` looks up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Query {
    /// The question.
    pub question: String,
    /// The entity name it is about.
    pub name: String,
}

#[derive(Clone, Debug)]
struct Thread {
    people: Vec<usize>,
    sessions: usize,
}

/// The corpus generator: an endless, deterministic stream of items.
#[derive(Clone, Debug)]
pub struct Generator {
    rng: Rng,
    people: Vec<Person>,
    threads: Vec<Thread>,
    clock: DateTime<Utc>,
    step_minutes: i64,
    counts: Counts,
    /// Long turns: each turn after the greeting is lengthened to 300–3,000 characters.
    long_turns: bool,
    /// The prose's own stream, so that a long corpus says what the short one says.
    prose_rng: Rng,
}

/// The cast size for a claim target: one person per ten claims, 20 to 2,000.
pub fn cast_size(claims_target: usize) -> usize {
    (claims_target / 10).clamp(20, 2000)
}

impl Generator {
    /// A generator for `people` people (at most the number of distinct names) and
    /// about `claims_target` claims, which spreads the items over about four years.
    pub fn new(seed: u64, people: usize, claims_target: usize) -> Self {
        let mut rng = Rng::new(seed);
        let mut names: Vec<(usize, usize)> = (0..FIRST_NAMES.len())
            .flat_map(|f| (0..LAST_NAMES.len()).map(move |l| (f, l)))
            .collect();
        rng.shuffle(&mut names);
        let people = names
            .into_iter()
            .take(people.max(2))
            .map(|(f, l)| Person {
                first: FIRST_NAMES[f],
                last: LAST_NAMES[l],
                employer: rng.below(ORGS.len()),
                city: rng.below(CITIES.len()),
                spouse: None,
                events: Vec::new(),
                mentioned: false,
                stated_employer: false,
                stated_city: false,
                former_employers: Vec::new(),
                former_cities: Vec::new(),
                contested_employer: false,
                contested_city: false,
            })
            .collect();
        // About eight claims per item; four years of items.
        let items = (claims_target / 8).max(1) as i64;
        let step_minutes = (4 * 365 * 24 * 60 / items).clamp(10, 7 * 24 * 60);
        Generator {
            rng,
            people,
            threads: Vec::new(),
            clock: Utc.with_ymd_and_hms(2022, 1, 3, 9, 0, 0).unwrap(),
            step_minutes,
            counts: Counts::default(),
            long_turns: false,
            prose_rng: Rng::new(seed ^ 0x9e37_79b9_7f4a_7c15),
        }
    }

    /// Make every turn after a session's greeting 300–3,000 characters long, as an
    /// assistant's or a talkative user's turn is: the turn's statement, then prose
    /// around it. The prose has a random stream of its own: the items, their
    /// statements and the cast's history are the short corpus's.
    pub fn long_turns(mut self, on: bool) -> Self {
        self.long_turns = on;
        self
    }

    /// Whether turns are lengthened ([`Generator::long_turns`]).
    pub fn has_long_turns(&self) -> bool {
        self.long_turns
    }

    /// The cast.
    pub fn people(&self) -> &[Person] {
        &self.people
    }

    /// What has been generated so far.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// The next item.
    pub fn next_item(&mut self) -> Item {
        let step = self.step_minutes;
        let advance = self.rng.range((step / 2) as usize, (step * 3 / 2) as usize) as i64;
        self.clock += Duration::minutes(advance);
        self.counts.items += 1;
        if self.rng.chance(60) {
            self.session()
        } else {
            self.document()
        }
    }

    // ------------------------------------------------------------ helpers

    fn name(&mut self, p: usize) -> String {
        self.people[p].mentioned = true;
        self.people[p].name()
    }

    fn other_person(&mut self, not: &[usize]) -> usize {
        loop {
            let p = self.rng.below(self.people.len());
            if !not.contains(&p) {
                return p;
            }
        }
    }

    fn other_index(&mut self, n: usize, not: usize) -> usize {
        let i = self.rng.below(n - 1);
        if i >= not { i + 1 } else { i }
    }

    /// `p` moves to `city` (said in the item being written).
    fn moved(&mut self, p: usize, city: usize) {
        let person = &mut self.people[p];
        person.former_cities.push(person.city);
        person.city = city;
        person.stated_city = true;
        person.contested_city = false;
    }

    /// `p` changes job to `org` (said in the item being written).
    fn changed_job(&mut self, p: usize, org: usize) {
        let person = &mut self.people[p];
        person.former_employers.push(person.employer);
        person.employer = org;
        person.stated_employer = true;
        person.contested_employer = false;
    }

    fn date_words(d: DateTime<Utc>) -> String {
        format!("{} {} {}", d.day(), MONTHS[d.month0() as usize], d.year())
    }

    fn month_year(d: DateTime<Utc>) -> String {
        format!("{} {}", MONTHS[d.month0() as usize], d.year())
    }

    // ------------------------------------------------------------ sessions

    fn session(&mut self) -> Item {
        let thread = if !self.threads.is_empty() && self.rng.chance(50) {
            self.rng.below(self.threads.len())
        } else {
            let n = if self.rng.chance(70) { 2 } else { 3 };
            let mut people = Vec::with_capacity(n);
            while people.len() < n {
                let p = self.other_person(&people);
                people.push(p);
            }
            self.threads.push(Thread {
                people,
                sessions: 0,
            });
            self.counts.conversations += 1;
            self.threads.len() - 1
        };
        self.threads[thread].sessions += 1;
        let session = self.threads[thread].sessions;
        let people = self.threads[thread].people.clone();
        self.counts.sessions += 1;
        let start = self.clock;
        let n_turns = self.rng.range(10, 30);
        let mut messages: Vec<Message> = Vec::with_capacity(n_turns);
        let mut at = start;
        let mut speaker_ix = 0usize;
        // A question waiting for its answer: the kind of answer it wants.
        let mut pending: Option<Answer> = None;
        for t in 1..=n_turns {
            if t > 1 {
                speaker_ix = if people.len() == 2 {
                    1 - speaker_ix
                } else {
                    self.other_index(people.len(), speaker_ix)
                };
            }
            let me = people[speaker_ix];
            let others: Vec<usize> = people.iter().copied().filter(|p| *p != me).collect();
            let text = match pending.take() {
                Some(answer) => self.answer(me, answer, at),
                None if t == 1 => {
                    let to = others[0];
                    let first = self.people[to].first;
                    self.people[to].mentioned = true;
                    self.counts.filler += 1;
                    format!("Hey {first}!")
                }
                None => self.turn(me, &mut pending, at),
            };
            let text = if self.long_turns && t > 1 {
                self.lengthen(text)
            } else {
                text
            };
            self.counts.text_bytes += text.len();
            self.people[me].mentioned = true;
            messages.push(Message {
                event_id: Some(format!("c{}:s{session}:t{t}", thread + 1)),
                speaker: self.people[me].name(),
                text,
                timestamp: Some(at),
            });
            at += Duration::minutes(self.rng.range(1, 4) as i64);
        }
        self.counts.turns += messages.len();
        Item::Session {
            source_ref: format!("synth/c{}/s{session}", thread + 1),
            conversation: Conversation {
                session_time: Some(start),
                messages,
            },
        }
    }

    /// One turn that is not an answer (it may ask a question).
    fn turn(&mut self, me: usize, pending: &mut Option<Answer>, at: DateTime<Utc>) -> String {
        match self.rng.below(100) {
            0..=29 => {
                self.counts.filler += 1;
                self.rng.pick(FILLER).to_string()
            }
            30..=49 => {
                self.counts.questions += 1;
                let (q, a) = match self.rng.below(5) {
                    0 => ("Where are you working these days?", Answer::Work),
                    1 => ("Where are you living now?", Answer::City),
                    2 => ("What did you do recently?", Answer::Event),
                    3 => ("Any news?", Answer::Change),
                    _ => (*self.rng.pick(GENERIC_QUESTIONS), Answer::Plain),
                };
                *pending = Some(a);
                q.to_string()
            }
            50..=61 => self.answer(me, Answer::Work, at),
            62..=71 => self.answer(me, Answer::City, at),
            72..=81 => self.answer(me, Answer::Event, at),
            82..=89 => self.answer(me, Answer::Change, at),
            _ => self.answer(me, Answer::Plain, at),
        }
    }

    /// `text` followed by prose sentences until it is 300–3,000 characters long.
    fn lengthen(&mut self, mut text: String) -> String {
        let goal = self.prose_rng.range(300, 3000);
        while text.len() < goal {
            let sentence = self.prose();
            if text.len() + 1 + sentence.len() > 3000 && text.len() >= 300 {
                break;
            }
            text.push(' ');
            text.push_str(&sentence);
            self.counts.prose_sentences += 1;
        }
        text
    }

    /// One sentence of talk around a statement: opinions, recollections and advice
    /// about nobody in the cast, built from parts so that sentences rarely repeat.
    fn prose(&mut self) -> String {
        let r = &mut self.prose_rng;
        let opener = *r.pick(PROSE_OPENERS);
        let body = match r.below(8) {
            0 => format!(
                "the {} in {} was {} than I expected",
                r.pick(PROSE_PLACES),
                r.pick(CITIES),
                r.pick(PROSE_COMPARATIVES)
            ),
            1 => format!(
                "I spent most of the {} {} and {}",
                r.pick(PROSE_PERIODS),
                r.pick(PROSE_GERUNDS),
                r.pick(PROSE_GERUNDS)
            ),
            2 => format!(
                "we talked for hours about {} and whether {} still matters",
                r.pick(PROSE_TOPICS),
                r.pick(PROSE_TOPICS)
            ),
            3 => format!(
                "my {} keeps telling me to {} more often",
                r.pick(PROSE_RELATIVES),
                r.pick(PROSE_VERBS)
            ),
            4 => format!(
                "there is a small {} near the {} where they sell {}",
                r.pick(PROSE_PLACES),
                r.pick(PROSE_PLACES),
                r.pick(PROSE_THINGS)
            ),
            5 => format!(
                "it took {} {} to {} the {}, which felt {}",
                number_word(r.range(2, 9)),
                r.pick(PROSE_UNITS),
                r.pick(PROSE_VERBS),
                r.pick(PROSE_THINGS),
                r.pick(PROSE_FEELINGS)
            ),
            6 => format!(
                "if you ever go to {}, try the {} at the {} by the {}",
                r.pick(CITIES),
                r.pick(PROSE_THINGS),
                r.pick(PROSE_PLACES),
                r.pick(PROSE_PLACES)
            ),
            _ => format!(
                "{} is {} when you are {}, at least in my experience",
                r.pick(HOBBIES),
                r.pick(PROSE_FEELINGS),
                r.pick(PROSE_GERUNDS)
            ),
        };
        let mut sentence = if opener.is_empty() {
            body
        } else {
            format!("{opener} {body}")
        };
        // Capitalise the first letter; the parts are lowercase.
        if let Some(first) = sentence.get(..1) {
            sentence.replace_range(..1, &first.to_uppercase());
        }
        sentence.push('.');
        sentence
    }

    /// A first-person statement of the given kind, said at `at`.
    fn answer(&mut self, me: usize, kind: Answer, at: DateTime<Utc>) -> String {
        match kind {
            Answer::Work => {
                self.counts.relations += 1;
                self.people[me].stated_employer = true;
                let org = ORGS[self.people[me].employer];
                if self.rng.chance(50) {
                    format!("I'm working at {org} these days.")
                } else {
                    format!("I'm still working at {org}.")
                }
            }
            Answer::City => {
                self.counts.relations += 1;
                self.people[me].stated_city = true;
                let city = CITIES[self.people[me].city];
                if self.rng.chance(50) {
                    format!("I'm living in {city} now.")
                } else {
                    let years = self.rng.range(2, 9);
                    format!(
                        "I'm still living in {city}, {} years now.",
                        number_word(years)
                    )
                }
            }
            Answer::Event => {
                self.counts.dated_events += 1;
                let e = self.rng.below(EVENTS.len());
                let city = CITIES[self.rng.below(CITIES.len())];
                let (phrase, days) = *self.rng.pick(RELATIVE_DAYS);
                let when = at - Duration::days(days);
                self.people[me].events.push((e, when));
                format!("I {} in {city} {phrase}.", EVENTS[e].0)
            }
            Answer::Change => self.change(me, at),
            Answer::Plain => {
                self.counts.plain_statements += 1;
                match self.rng.below(3) {
                    0 => format!("I'm really into {} lately.", self.rng.pick(HOBBIES)),
                    1 => format!("My sister just visited from {}.", self.rng.pick(CITIES)),
                    _ => format!(
                        "I finally finished the book about {} that you recommended.",
                        self.rng.pick(CITIES)
                    ),
                }
            }
        }
    }

    /// A move, a job change or a marriage in the first person.
    fn change(&mut self, me: usize, at: DateTime<Utc>) -> String {
        match self.rng.below(10) {
            0..=3 => {
                self.counts.changes += 1;
                let city = self.other_index(CITIES.len(), self.people[me].city);
                self.moved(me, city);
                format!("I moved to {} last month.", CITIES[city])
            }
            4..=7 => {
                self.counts.changes += 1;
                let old = self.people[me].employer;
                let new = self.other_index(ORGS.len(), old);
                self.changed_job(me, new);
                if self.rng.chance(50) {
                    format!("I joined {} last week.", ORGS[new])
                } else {
                    format!(
                        "I left {} and joined {} in {}.",
                        ORGS[old],
                        ORGS[new],
                        Self::month_year(at)
                    )
                }
            }
            _ => match self.people[me].spouse {
                None => {
                    self.counts.marriages += 1;
                    let spouse = self.other_person(&[me]);
                    self.people[me].spouse = Some(spouse);
                    if self.people[spouse].spouse.is_none() {
                        self.people[spouse].spouse = Some(me);
                    }
                    let name = self.name(spouse);
                    format!("I married {name} last month.")
                }
                Some(_) => {
                    self.counts.plain_statements += 1;
                    format!("My family and I spent a week in {}.", self.rng.pick(CITIES))
                }
            },
        }
    }

    // ------------------------------------------------------------ documents

    fn document(&mut self) -> Item {
        self.counts.notes += 1;
        let n = self.counts.notes;
        let now = self.clock;
        let (title, paragraphs) = match self.rng.below(100) {
            0..=34 => (format!("Directory update {n}"), self.directory()),
            35..=64 => (format!("Announcements {n}"), self.announcements(now)),
            65..=89 => (format!("Events log {n}"), self.events_log(now)),
            _ => (format!("Meeting notes {n}"), self.meeting()),
        };
        let mut text = format!("# {title}\n\n");
        for p in paragraphs {
            text.push_str(&p);
            text.push_str("\n\n");
        }
        self.counts.text_bytes += text.len();
        Item::Document {
            source_ref: format!("synth/d{n}"),
            source_time: now,
            text,
        }
    }

    fn paragraphs(&mut self) -> usize {
        self.rng.range(3, 5)
    }

    /// Who works and lives where; one entry in five disagrees with the truth.
    fn directory(&mut self) -> Vec<String> {
        (0..self.paragraphs())
            .map(|_| {
                let p = self.rng.below(self.people.len());
                let name = self.name(p);
                let wrong = self.rng.chance(20);
                if wrong {
                    self.counts.contradictions += 1;
                } else {
                    self.counts.relations += 2;
                    self.people[p].stated_employer = true;
                    self.people[p].stated_city = true;
                }
                let (org, city) = if wrong {
                    if self.rng.chance(50) {
                        self.people[p].contested_employer = true;
                        (
                            self.other_index(ORGS.len(), self.people[p].employer),
                            self.people[p].city,
                        )
                    } else {
                        self.people[p].contested_city = true;
                        (
                            self.people[p].employer,
                            self.other_index(CITIES.len(), self.people[p].city),
                        )
                    }
                } else {
                    (self.people[p].employer, self.people[p].city)
                };
                format!(
                    "{name} works at {}. {name} lives in {}.",
                    ORGS[org], CITIES[city]
                )
            })
            .collect()
    }

    /// Job changes, moves and marriages, dated.
    fn announcements(&mut self, now: DateTime<Utc>) -> Vec<String> {
        (0..self.paragraphs())
            .map(|_| {
                let p = self.rng.below(self.people.len());
                let name = self.name(p);
                let when = Self::month_year(now - Duration::days(self.rng.range(0, 40) as i64));
                match self.rng.below(10) {
                    0..=3 => {
                        self.counts.changes += 1;
                        let new = self.other_index(ORGS.len(), self.people[p].employer);
                        self.changed_job(p, new);
                        format!("{name} joined {} in {when}. Welcome aboard!", ORGS[new])
                    }
                    4..=7 => {
                        self.counts.changes += 1;
                        let new = self.other_index(CITIES.len(), self.people[p].city);
                        self.moved(p, new);
                        format!("{name} moved to {} in {when}.", CITIES[new])
                    }
                    _ => {
                        let other = self.other_person(&[p]);
                        let other_name = self.name(other);
                        if self.people[p].spouse.is_none() {
                            self.counts.marriages += 1;
                            self.people[p].spouse = Some(other);
                            if self.people[other].spouse.is_none() {
                                self.people[other].spouse = Some(p);
                            }
                            format!("{name} married {other_name} in {when}. Congratulations!")
                        } else {
                            self.counts.relations += 1;
                            let org = ORGS[self.people[p].employer];
                            format!("{name} met {other_name} at the {org} summer party.")
                        }
                    }
                }
            })
            .collect()
    }

    /// Dated events with absolute dates.
    fn events_log(&mut self, now: DateTime<Utc>) -> Vec<String> {
        (0..self.paragraphs())
            .map(|_| {
                self.counts.dated_events += 1;
                let when = now - Duration::days(self.rng.range(1, 60) as i64);
                let date = Self::date_words(when);
                let city = CITIES[self.rng.below(CITIES.len())];
                if self.rng.chance(25) {
                    let org = ORGS[self.rng.below(ORGS.len())];
                    format!("{org} opened an office in {city} on {date}.")
                } else {
                    let p = self.rng.below(self.people.len());
                    let name = self.name(p);
                    let e = self.rng.below(EVENTS.len());
                    self.people[p].events.push((e, when));
                    format!("On {date}, {name} {} in {city}.", EVENTS[e].0)
                }
            })
            .collect()
    }

    fn meeting(&mut self) -> Vec<String> {
        (0..self.paragraphs())
            .map(|_| {
                self.counts.meeting_lines += 1;
                self.rng.pick(MEETING_LINES).to_string()
            })
            .collect()
    }

    // ------------------------------------------------------------ queries

    /// `n` questions about people the corpus has named (and their employers), drawn
    /// with their own generator seeded from `seed`; the same state and seed give
    /// the same questions.
    pub fn queries(&self, n: usize, seed: u64) -> Vec<Query> {
        let mut rng = Rng::new(seed ^ 0x5CA1_E000_0000_0001);
        let named: Vec<usize> = (0..self.people.len())
            .filter(|&p| self.people[p].mentioned)
            .collect();
        let pool: Vec<usize> = if named.is_empty() {
            (0..self.people.len()).collect()
        } else {
            named
        };
        (0..n)
            .map(|_| {
                let p = &self.people[*rng.pick(&pool)];
                let name = p.name();
                match rng.below(6) {
                    0 => Query {
                        question: format!("Where does {name} work?"),
                        name,
                    },
                    1 => Query {
                        question: format!("Where does {name} live?"),
                        name,
                    },
                    2 => match p.spouse {
                        Some(_) => Query {
                            question: format!("Who is {name} married to?"),
                            name,
                        },
                        None => Query {
                            question: format!("Has {name} moved recently?"),
                            name,
                        },
                    },
                    3 => {
                        let e = p
                            .events
                            .last()
                            .map_or_else(|| rng.below(EVENTS.len()), |(e, _)| *e);
                        Query {
                            question: format!("When did {name} {}?", EVENTS[e].1),
                            name,
                        }
                    }
                    4 => {
                        let org = ORGS[p.employer];
                        Query {
                            question: format!("Who works at {org}?"),
                            name: org.to_string(),
                        }
                    }
                    _ => {
                        let year = p.events.last().map_or(2023, |(_, d)| d.year());
                        Query {
                            question: format!("What did {name} do in {year}?"),
                            name,
                        }
                    }
                }
            })
            .collect()
    }
}

#[derive(Clone, Copy, Debug)]
enum Answer {
    Work,
    City,
    Event,
    Change,
    Plain,
}

fn number_word(n: usize) -> &'static str {
    const WORDS: [&str; 11] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    ];
    WORDS[n.min(10)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus(seed: u64, items: usize) -> String {
        let mut g = Generator::new(seed, 50, 500);
        (0..items)
            .map(|_| serde_json::to_string(&g.next_item()).unwrap())
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn texts(seed: u64, items: usize) -> Vec<String> {
        let mut g = Generator::new(seed, 50, 500);
        let mut out = Vec::new();
        for _ in 0..items {
            match g.next_item() {
                Item::Session { conversation, .. } => {
                    out.extend(conversation.messages.into_iter().map(|m| m.text))
                }
                Item::Document { text, .. } => out.push(text),
            }
        }
        out
    }

    #[test]
    fn splitmix_matches_the_reference_sequence() {
        // SplitMix64 seeded with 1234567 (the reference implementation's test vector).
        let mut r = Rng::new(1_234_567);
        assert_eq!(r.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(r.next_u64(), 3_203_168_211_198_807_973);
        let mut r = Rng::new(7);
        for _ in 0..1000 {
            assert!(r.below(13) < 13);
            let x = r.range(10, 30);
            assert!((10..=30).contains(&x));
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_corpus_and_another_seed_another() {
        let a = corpus(42, 60);
        assert_eq!(a, corpus(42, 60));
        assert_ne!(a, corpus(43, 60));
        let g = Generator::new(42, 50, 500);
        assert_eq!(g.queries(20, 42), g.queries(20, 42));
    }

    /// Long turns: every turn after a session's greeting is 300–3,000 characters,
    /// keeps its statement at the front, and the prose varies; notes and the
    /// greeting are as in the short corpus, and the byte count is the text's.
    #[test]
    fn long_turns_are_three_hundred_to_three_thousand_characters_around_their_statement() {
        let mut short = Generator::new(5, 50, 500);
        let mut long = Generator::new(5, 50, 500).long_turns(true);
        let (mut bytes, mut turns, mut distinct) = (0, 0, std::collections::HashSet::new());
        for _ in 0..40 {
            match (short.next_item(), long.next_item()) {
                (
                    Item::Session {
                        conversation: s, ..
                    },
                    Item::Session {
                        conversation: l, ..
                    },
                ) => {
                    assert_eq!(s.messages.len(), l.messages.len());
                    assert_eq!(s.messages[0].text, l.messages[0].text, "the greeting");
                    for (a, b) in s.messages.iter().zip(&l.messages).skip(1) {
                        let n = b.text.len();
                        assert!((300..=3000).contains(&n), "{n}: {}", b.text);
                        assert!(b.text.starts_with(a.text.as_str()), "{}", b.text);
                        distinct.extend(b.text[a.text.len()..].split(". ").map(str::to_string));
                        turns += 1;
                    }
                    bytes += l.messages.iter().map(|m| m.text.len()).sum::<usize>();
                }
                (Item::Document { text: a, .. }, Item::Document { text: b, .. }) => {
                    assert_eq!(a, b);
                    bytes += b.len();
                }
                _ => panic!("the long corpus took another path"),
            }
        }
        assert!(turns > 100, "{turns}");
        assert_eq!(long.counts().text_bytes, bytes);
        assert!(long.counts().text_bytes > 5 * short.counts().text_bytes);
        let sentences = long.counts().prose_sentences;
        assert!(
            distinct.len() * 10 > sentences * 9,
            "{} of {sentences}",
            distinct.len()
        );
    }

    #[test]
    fn it_writes_every_shape() {
        let mut g = Generator::new(3, 50, 500);
        let mut sessions = 0;
        for _ in 0..200 {
            if let Item::Session { conversation, .. } = g.next_item() {
                sessions += 1;
                let n = conversation.messages.len();
                assert!((10..=30).contains(&n), "{n} turns");
                let id = conversation.messages[0].event_id.clone().unwrap();
                assert!(id.starts_with('c') && id.ends_with(":t1"), "{id}");
                assert!(conversation.session_time.is_some());
            }
        }
        assert!(sessions > 0);
        let c = g.counts();
        for (shape, n) in [
            ("relations", c.relations),
            ("changes", c.changes),
            ("contradictions", c.contradictions),
            ("dated events", c.dated_events),
            ("marriages", c.marriages),
            ("questions", c.questions),
            ("filler", c.filler),
        ] {
            assert!(n > 0, "no {shape} in 200 items: {c:?}");
        }
        let all = texts(3, 200).join("\n");
        for needle in [
            " works at ",
            " lives in ",
            "I moved to ",
            " joined ",
            "I'm working at ",
            " married ",
            "On ",
            " last week.",
            "?",
        ] {
            assert!(all.contains(needle), "no `{needle}` in the corpus");
        }
    }

    #[test]
    fn the_cast_records_what_changed() {
        let mut g = Generator::new(5, 30, 300);
        let all = (0..300)
            .map(|_| serde_json::to_string(&g.next_item()).unwrap())
            .collect::<Vec<_>>()
            .join("\n");
        let people = g.people();
        let changed: Vec<&Person> = people
            .iter()
            .filter(|p| !p.former_employers.is_empty())
            .collect();
        assert!(!changed.is_empty(), "no job change in 300 items");
        assert!(people.iter().any(|p| !p.former_cities.is_empty()));
        assert!(
            people
                .iter()
                .any(|p| p.contested_employer || p.contested_city)
        );
        for p in changed {
            // The latest change replaced the last former employer, and the corpus
            // says where they went.
            assert_ne!(p.former_employers.last(), Some(&p.employer), "{}", p.name());
            assert!(p.stated_employer);
            assert!(
                all.contains(&format!("joined {}", ORGS[p.employer])),
                "{}: no `joined {}`",
                p.name(),
                ORGS[p.employer]
            );
        }
        for p in people.iter().filter(|p| !p.former_cities.is_empty()) {
            assert_ne!(p.former_cities.last(), Some(&p.city), "{}", p.name());
            assert!(all.contains(&format!("moved to {}", CITIES[p.city])));
        }
    }

    #[test]
    fn queries_name_people_the_corpus_mentions() {
        let mut g = Generator::new(9, 40, 400);
        for _ in 0..30 {
            g.next_item();
        }
        let named: Vec<String> = g
            .people()
            .iter()
            .filter(|p| p.mentioned)
            .map(Person::name)
            .collect();
        let qs = g.queries(50, 9);
        assert_eq!(qs.len(), 50);
        for q in &qs {
            assert!(q.question.ends_with('?'));
            assert!(
                named.contains(&q.name) || ORGS.contains(&q.name.as_str()),
                "{q:?}"
            );
            assert!(q.question.contains(&q.name), "{q:?}");
        }
    }
}
