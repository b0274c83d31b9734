"""The hard update benchmark: facts of a user's life that change, stated inside real talk.

`updates` (data/updates.py) states each fact in a one-line note of its own, so the notes of
one subject look alike and freshness ordering can tell they belong together. Real memory is
messier, and this generator reproduces that (issue 14):

- A vault is a user's notes of their chats. Every note is 2-4 stretches of real LoCoMo talk
  with one friend (read in place from the shared bench data; the user is the conversation's
  first speaker, written `me:`), so each note is about several topics. The filler never
  mentions any fact's subject or values (`clean_turn`), so it states no rival fact.
- Each vault holds one fact per kind (27 kinds: where someone lives, works, what they drive,
  which editor they use...), about the user or a person in their life; three vaults, 81
  facts. Each fact is stated 2-3 times, 70-120 days apart, each time as a short exchange (the
  statement, the friend's reaction, a follow-up) among the other talk, worded differently
  each time: only the fact's key words are shared, and sometimes the later statement names
  the old value ("I traded in a Honda Civic for a VW Golf").
- Distractors: for every fact, a note that talks about the same subject without stating it
  ("my sister Nora spent all evening complaining about rent at home"), and some statement
  notes carry another fact's distractor line.
- Each fact has one question asking for the current value, worded unlike every statement
  ("Which city is the user's sister Nora living in these days?").

Two renderings of the same notes: `frontmatter` (a `created` key, undated file names) and
`journal` (one `journal/YYYY-MM-DD.md` file per day, no frontmatter, file time set to the
note's time, as in a daily-notes vault written day by day). Every note has a day of its own.

Pure and deterministic for a seed: `generate_updates_hard(sessions, ...)` takes the filler
sessions as values (tests pass their own); `build_updates_hard(data, root, style=...)` reads
LoCoMo, writes the vaults and returns the questions. Calibration code should call the latter,
then `bench.runners.updates_hard.evaluate_bench` (or `evaluate` on an open Memory).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import re
import shutil
from collections.abc import Sequence, Set
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..harness import iso, sync_vault

# --------------------------------------------------------------------------- the facts

# (subject, object, possessive, in a question): a template uses one of {S}, {O}, {P} at most,
# so it reads right for "I" and for "my sister Nora" alike (past tense or a possessive only).
PEOPLE = {
    "user": ("I", "me", "my", "the user"),
    "sister": ("my sister Nora", "my sister Nora", "my sister Nora's", "the user's sister Nora"),
    "brother": ("my brother Tom", "my brother Tom", "my brother Tom's", "the user's brother Tom"),
    "partner": ("my partner Alex", "my partner Alex", "my partner Alex's", "the user's partner Alex"),
    "friend": ("my friend Priya", "my friend Priya", "my friend Priya's", "the user's friend Priya"),
    "dad": ("my dad", "my dad", "my dad's", "the user's dad"),
    "colleague": ("my colleague Marcus", "my colleague Marcus", "my colleague Marcus's", "the user's colleague Marcus"),
}


@dataclass(frozen=True)
class Kind:
    """One kind of changing fact: its values, and paraphrased ways to state it, follow it up,
    ask for it and talk around it. {S}/{O}/{P} the person (subject/object/possessive), {Q} the
    person in a question, {v} the value, {old} the previous value. Every statement, change and
    question holds at least one of the kind's key words (stems), as people name what they
    talk about; nothing else is shared."""

    name: str
    people: tuple[str, ...]
    keywords: tuple[str, ...]  # word stems ("driv": drive, driving); the first is in every statement and question
    values: tuple[str, ...]
    statements: tuple[str, ...]
    changes: tuple[str, ...]
    details: tuple[str, ...]  # the user's follow-up after the friend's reaction (no value)
    questions: tuple[str, ...]
    distractors: tuple[str, ...]


KINDS: tuple[Kind, ...] = (
    Kind(
        "city",
        ("user", "sister", "brother", "partner", "friend", "dad"),
        ("city", "live", "home", "moved"),
        (
            "Lisbon",
            "Denver",
            "Leeds",
            "Montreal",
            "Osaka",
            "Austin",
            "Utrecht",
            "Porto",
            "Melbourne",
            "Valencia",
            "Edinburgh",
            "Bologna",
            "Halifax",
        ),
        (
            "{S} moved to {v} last month, a new city, and the boxes are finally unpacked.",
            "Home for {O} is the city of {v} now.",
            "{S} signed a year-long lease on a flat in {v}, a city with a river.",
            "The city {S} chose to live in was {v}, after months of searching.",
        ),
        ("{S} left {old} behind and moved cities, to {v}.", "No more {old}: {P} new home city is {v}."),
        (
            "The flat is tiny, but the neighbourhood is lovely and quiet.",
            "The best part is the river walk right outside the door.",
            "Rent is lower too, which helps a lot.",
        ),
        (
            "Which city does {Q} live in now?",
            "Which city is {Q} living in these days?",
            "What city does {Q} call home at the moment?",
        ),
        (
            "{S} spent all evening complaining about how expensive it has become to live anywhere central.",
            "{P} landlord at home still hasn't fixed the heating.",
            "{S} spent the weekend looking at furniture for the living room at home.",
        ),
    ),
    Kind(
        "employer",
        ("user", "sister", "brother", "partner", "friend"),
        ("job", "work", "employ", "hired"),
        (
            "Spotify",
            "a small bakery",
            "the city library",
            "Siemens",
            "a design studio",
            "the children's hospital",
            "a climate startup",
            "the university",
            "an accounting firm",
            "a bike shop",
        ),
        (
            "{S} started a new job at {v} on Monday.",
            "{P} paycheck comes from {v} now, it's a proper full-time job.",
            "{S} accepted the job offer from {v}, starting next week.",
            "{S} got the job at {v} after the third interview.",
        ),
        ("{S} quit the job at {old} and joined {v}.", "{S} handed in notice at {old}; the new job is with {v}."),
        (
            "The first week was mostly onboarding and meeting people.",
            "The commute is short and the people seem friendly.",
            "The pay is better than before, which was the main reason.",
        ),
        (
            "Where is {Q}'s job now?",
            "Which employer does {Q} have a job with at the moment?",
            "What job does {Q} have these days, and where?",
        ),
        (
            "{S} had a rough week at work with far too many meetings.",
            "{P} boss at work organised a team dinner that ran very late.",
            "{S} was thinking about asking for a raise at work.",
        ),
    ),
    Kind(
        "car",
        ("user", "partner", "dad", "brother"),
        ("car", "driv", "drove"),
        (
            "a Toyota Corolla",
            "a Honda Civic",
            "a Tesla Model 3",
            "a VW Golf",
            "a Subaru Outback",
            "a Mazda 3",
            "a Ford Focus",
            "a Kia Niro",
            "a Volvo V60",
            "a Fiat 500",
        ),
        (
            "{S} bought {v} from a dealer outside town, a really nice car.",
            "The car in {P} driveway is {v} now.",
            "{S} picked up {v}, a second-hand car that drives like new.",
            "{S} drove {v} home from the car dealership yesterday.",
        ),
        ("{S} traded in {old} for {v}, the new car.", "{S} sold {old}; {v} is the car now."),
        (
            "It is so much quieter on the highway than the last one.",
            "The boot is big enough for all the camping gear.",
            "Fuel costs dropped a lot, which was the whole point.",
        ),
        (
            "What car does {Q} drive now?",
            "Which car does {Q} own these days?",
            "Which car is {Q} driving at the moment?",
        ),
        (
            "{S} spent the whole afternoon at the car wash.",
            "{P} car insurance renewal came in higher than expected.",
            "{S} got a parking ticket after driving downtown.",
        ),
    ),
    Kind(
        "phone",
        ("user", "friend", "partner", "dad"),
        ("phone",),
        (
            "an iPhone 15",
            "a Pixel 8",
            "a Galaxy S23",
            "a Fairphone 5",
            "a OnePlus 12",
            "a Nothing Phone",
            "a Motorola Edge",
            "an iPhone SE",
        ),
        (
            "{v} was a birthday present for {O}, a lovely new phone.",
            "{P} new phone is {v}.",
            "{S} ordered {v} online and the phone arrived this morning.",
            "{S} set up {v} over the weekend, phone number and all.",
        ),
        ("{S} retired {old}; {v} is the phone now.", "Goodbye {old}: {S} upgraded the phone to {v}."),
        (
            "The camera is amazing, even at night.",
            "The battery lasts two full days now.",
            "Moving all the photos across took a whole evening.",
        ),
        (
            "What phone does {Q} use now?",
            "Which phone does {Q} carry these days?",
            "What phone does {Q} have at the moment?",
        ),
        (
            "{S} dropped the phone in the sink again, luckily no damage.",
            "{P} phone bill doubled because of roaming.",
            "{S} turned off all phone notifications for a week.",
        ),
    ),
    Kind(
        "editor",
        ("user", "friend", "colleague"),
        ("editor", "code", "coding"),
        ("Vim", "VS Code", "Emacs", "Helix", "Zed", "Sublime Text", "IntelliJ IDEA", "Neovim"),
        (
            "{S} did all the coding in {v} this week, a lovely editor.",
            "{P} editor of choice is {v}.",
            "{S} configured {v} from scratch as the main code editor.",
            "At the pairing session today the editor on screen was {v}, as always with {O}.",
        ),
        ("{S} dropped {old} and moved to the {v} editor for code.", "{S} gave up on {old}; the editor is {v} now."),
        (
            "The keyboard shortcuts took a week to learn.",
            "A dark theme and a bigger font made a real difference.",
            "The plugins are what sold it in the end.",
        ),
        (
            "Which editor does {Q} use now?",
            "What editor does {Q} write code in these days?",
            "Which code editor is {Q} working in at the moment?",
        ),
        (
            "{S} complained that the laptop fans spin up during every code build.",
            "{S} reviewed a huge pull request all afternoon, line by line in the editor.",
            "{P} editor font finally got an upgrade.",
        ),
    ),
    Kind(
        "sport",
        ("user", "sister", "brother", "partner", "friend", "dad"),
        ("sport", "fit", "exercis", "workout"),
        (
            "rock climbing",
            "CrossFit",
            "swimming",
            "trail running",
            "yoga",
            "boxing",
            "road cycling",
            "rowing",
            "pilates",
            "tennis",
        ),
        (
            "{S} took up {v} as a sport, three sessions a week.",
            "{P} sport and workout routine is {v} now.",
            "{S} signed up for {v} classes at the community centre, a sport at last.",
            "{S} got really into {v} over the summer, the sport of the year.",
        ),
        ("{S} quit {old}; {v} is the new sport.", "{S} swapped {old} for {v} as the weekly sport."),
        (
            "The first sessions hurt, but it gets easier every week.",
            "It is the one hour of the day without screens.",
            "There is a friendly group that meets after work.",
        ),
        (
            "What sport does {Q} do now?",
            "Which sport keeps {Q} fit these days?",
            "Which sport is {Q} into at the moment?",
        ),
        (
            "{S} bought new trainers for the workouts but barely wore them.",
            "{P} gym membership fee went up again, so much for getting fit.",
            "{S} pulled a muscle and skipped exercise all week.",
        ),
    ),
    Kind(
        "diet",
        ("user", "partner", "sister", "friend"),
        ("diet", "eat", "meal"),
        ("vegetarian", "vegan", "pescatarian", "keto", "gluten-free", "dairy-free", "paleo", "low-carb"),
        (
            "{S} went {v} at the start of the month, a whole new diet.",
            "{P} diet is strictly {v} now, no exceptions.",
            "{S} switched to a {v} diet in the spring.",
            "Every meal on {P} plate is {v}, a proper diet.",
        ),
        (
            "After a year of {old} meals, {S} changed diet and went {v}.",
            "{S} moved on from {old} eating to a {v} diet.",
        ),
        (
            "Cooking takes longer, but the energy is much better.",
            "Eating out is the hard part; most menus have one option.",
            "The grocery bill went down, surprisingly.",
        ),
        (
            "What diet does {Q} follow now?",
            "How does {Q} eat these days, on which diet?",
            "What kind of diet is {Q} eating on at the moment?",
        ),
        (
            "{S} tried a new ramen place downtown and forgot all about the diet.",
            "{P} fridge was completely empty on Sunday, no meals planned.",
            "{S} baked bread for the first time, a rare treat to eat.",
        ),
    ),
    Kind(
        "coffee",
        ("user", "colleague", "partner", "dad"),
        ("coffee", "drink"),
        (
            "a flat white",
            "a double espresso",
            "a cold brew",
            "a chai latte",
            "a matcha latte",
            "a decaf cappuccino",
            "an oat cortado",
            "a black americano",
        ),
        (
            "{S} ordered {v} at the coffee shop, same as every morning.",
            "{P} usual coffee is {v}.",
            "Getting coffee for the team: {v} for {O}.",
            "{S} made {v} at home with the new coffee machine.",
        ),
        ("{S} gave up {old}; the morning coffee is {v} now.", "No more {old} for {O}, {v} is the coffee now."),
        (
            "The barista knows the order by heart at this point.",
            "One cup in the morning and nothing after lunch.",
            "It is the small ritual that starts the day.",
        ),
        (
            "What coffee does {Q} drink in the morning now?",
            "What coffee does {Q} order these days?",
            "Which coffee does {Q} start the day with at the moment?",
        ),
        (
            "{S} spilled coffee all over the keyboard.",
            "{S} spent far too long in the queue at the coffee shop.",
            "{P} favourite mug broke in the dishwasher mid-drink.",
        ),
    ),
    Kind(
        "instrument",
        ("user", "brother", "friend"),
        ("instrument", "play", "lesson"),
        ("guitar", "piano", "violin", "drums", "ukulele", "cello", "saxophone", "bass guitar"),
        (
            "{S} started {v} lessons on Thursday evenings, a new instrument.",
            "{S} practised {v} for an hour before dinner, the instrument is fun.",
            "{P} new instrument is the {v}.",
            "{S} bought a second-hand {v}, an instrument to play at home.",
        ),
        (
            "{S} put the {old} away and picked up the {v}, a new instrument.",
            "{S} stopped the {old} lessons; the instrument is {v} now.",
        ),
        (
            "The teacher is patient and very funny.",
            "The neighbours have been kind about the noise so far.",
            "Reading sheet music is the hardest part.",
        ),
        (
            "Which instrument does {Q} play now?",
            "What instrument is {Q} learning these days?",
            "What instrument does {Q} play at the moment?",
        ),
        (
            "{S} went to a jazz concert downtown and watched the players all night.",
            "{S} made a playlist for the road trip.",
            "{P} neighbours complained about the noise from the music lesson next door.",
        ),
    ),
    Kind(
        "language",
        ("user", "sister", "partner"),
        ("language", "learn"),
        ("Spanish", "Japanese", "German", "Portuguese", "Korean", "Italian", "Mandarin", "Dutch", "French"),
        (
            "{S} signed up for an evening language course to learn {v}.",
            "{S} practised {v} with the language app for thirty minutes.",
            "{P} language exchange partner helps with {v} grammar.",
            "{S} booked a tutor to get better at {v}, a tricky language.",
        ),
        (
            "{S} paused {old} and started learning a new language, {v}.",
            "{S} dropped the {old} classes; {v} is the language now.",
        ),
        (
            "The grammar is tough, but the vocabulary sticks.",
            "There is a trip planned to practise it properly.",
            "Twenty minutes a day is the rule.",
        ),
        (
            "Which language is {Q} learning now?",
            "What language is {Q} studying these days?",
            "Which foreign language does {Q} practise at the moment?",
        ),
        (
            "{S} watched a foreign-language film without subtitles.",
            "{S} bought a new notebook for learning vocabulary.",
            "{P} language flashcards were all over the desk.",
        ),
    ),
    Kind(
        "commute",
        ("user", "partner", "sister"),
        ("commut", "work", "office"),
        ("by bike", "by bus", "by train", "on foot", "by car", "on an e-scooter", "by tram", "by ferry"),
        (
            "{S} made the commute {v} today, like every day lately.",
            "The daily commute for {O} is {v} now.",
            "{S} started the commute to work {v}.",
            "{P} commute to the office is forty minutes {v}.",
        ),
        (
            "{S} stopped commuting {old}; it's {v} to work from now on.",
            "{S} used to commute {old}, but switched to travelling {v}.",
        ),
        (
            "It is cheaper, and there is time to read on the way.",
            "Rain is the only downside.",
            "Arriving at work is so much calmer this way.",
        ),
        (
            "How does {Q} commute to work now?",
            "How does {Q} commute these days?",
            "What is {Q}'s commute to the office at the moment?",
        ),
        (
            "{S} was late to work because of roadworks.",
            "{S} listened to a whole podcast on the commute.",
            "{P} office moved to the second floor.",
        ),
    ),
    Kind(
        "laptop",
        ("user", "friend", "colleague"),
        ("laptop", "computer"),
        (
            "a MacBook Air",
            "a ThinkPad X1",
            "a Dell XPS 13",
            "a Framework laptop",
            "a Surface Laptop",
            "an HP Spectre",
            "an Asus Zenbook",
            "a MacBook Pro",
        ),
        (
            "{S} unboxed {v} and spent the evening setting the laptop up.",
            "{P} work laptop is {v}.",
            "{S} bought {v} with the refund money, the old laptop was dying.",
            "{S} brought {v} to the meeting, the laptop battery lasted all day.",
        ),
        ("{S} retired {old}; {v} is the laptop now.", "{S} replaced the old {old} with {v} as the main laptop."),
        (
            "The keyboard is lovely to type on.",
            "It is light enough to carry everywhere.",
            "Moving all the files across took a whole evening.",
        ),
        (
            "Which laptop does {Q} use now?",
            "What laptop is {Q} working on these days?",
            "What laptop does {Q} have at the moment?",
        ),
        (
            "{S} spilled water near the laptop keyboard but nothing broke.",
            "{S} ran out of disk space on the computer again.",
            "{P} laptop charger went missing at the office.",
        ),
    ),
    Kind(
        "music",
        ("user", "partner"),
        ("music", "stream", "listen"),
        ("Spotify", "Apple Music", "Tidal", "YouTube Music", "Deezer", "Bandcamp", "Qobuz"),
        (
            "{S} subscribed to {v} for the family plan, for all the music.",
            "All of {P} music playlists live on {v} now.",
            "{S} listened to the new album on {v}, the music app.",
            "{S} paid for a year of {v} upfront to stream music.",
        ),
        ("{S} cancelled {old} and moved the music to {v}.", "{S} left {old}; the music comes from {v} now."),
        (
            "The sound quality is noticeably better.",
            "The recommendations are spot on, lots of new bands.",
            "It works in the car too, which is all that matters.",
        ),
        (
            "Which music service does {Q} use now?",
            "Where does {Q} stream music these days?",
            "What app is {Q} listening to music on at the moment?",
        ),
        (
            "{S} made a playlist of gym music.",
            "{S} went to a concert with friends and listened to the support act too.",
            "{P} headphones stopped working on the left side mid-song, no music for a day.",
        ),
    ),
    Kind(
        "bank",
        ("user", "partner"),
        ("bank", "account"),
        ("Monzo", "ING", "Chase", "N26", "Revolut", "a local credit union", "Barclays", "Wells Fargo"),
        (
            "{S} opened an account with {v}, a new bank, and moved the salary there.",
            "{P} bank is {v} now.",
            "{S} got a new debit card from {v} in the post, the new bank.",
            "The mortgage payments go through {v} for {O}, all banking is there.",
        ),
        ("{S} closed the {old} account; the bank is {v} now.", "{S} switched banks, {old} out and {v} in."),
        (
            "The app is much easier to use.",
            "No more fees on every transfer.",
            "Moving the direct debits took a full afternoon.",
        ),
        ("Which bank does {Q} use now?", "Where does {Q} bank these days?", "What bank is {Q} with at the moment?"),
        (
            "{S} spent an evening sorting out the taxes and the bank statements.",
            "{S} argued with customer support about a fee on the account.",
            "{P} budget spreadsheet is a mess, every bank statement in a pile.",
        ),
    ),
    Kind(
        "dentist",
        ("user", "dad"),
        ("dentist", "dental"),
        ("Dr. Patel", "Dr. Okoye", "Dr. Lindqvist", "Dr. Moreau", "Dr. Santos", "Dr. Nguyen", "Dr. Weber"),
        (
            "{S} had a check-up with {v}, the dentist, and no cavities.",
            "{P} dentist is {v} at the clinic on Park Road.",
            "{S} booked a cleaning with {v}, the new dentist, for next month.",
            "{v} fixed a chipped tooth for {O} in twenty minutes, a great dentist.",
        ),
        ("{S} stopped seeing {old}; {v} is the dentist now.", "{S} moved dentist practices, from {old} to {v}."),
        (
            "The clinic is close and the waiting times are short.",
            "The whole appointment was painless for once.",
            "The receptionist even remembered the last visit.",
        ),
        (
            "Which dentist does {Q} see now?",
            "Which dentist does {Q} go to for check-ups these days?",
            "Which dentist is {Q} registered with at the moment?",
        ),
        (
            "{S} bought an electric toothbrush on the dentist's advice.",
            "{P} tooth was aching all weekend, no dentist open.",
            "{S} forgot about the dental appointment reminder.",
        ),
    ),
    Kind(
        "team",
        ("user", "colleague", "friend"),
        ("team",),
        (
            "the payments team",
            "the search team",
            "data platform",
            "the mobile team",
            "developer tools",
            "site reliability",
            "the growth team",
        ),
        (
            "{S} joined {v} after the reorg, a new team.",
            "{P} desk is with {v} on the fourth floor, the team is great.",
            "{S} spent the first sprint on the new team, {v}.",
            "{S} presented at the demo day for {v} as part of the team.",
        ),
        (
            "{S} left {old} and transferred to {v}, a different team.",
            "{S} rotated off {old}; the home team is {v} now.",
        ),
        (
            "The standups are short and to the point.",
            "Everyone on it has been very welcoming.",
            "The on-call rotation is lighter than before.",
        ),
        (
            "Which team is {Q} on now?",
            "What team does {Q} work in these days?",
            "Which team at work does {Q} belong to at the moment?",
        ),
        (
            "{S} sat through a long team planning meeting.",
            "{P} team offsite got cancelled.",
            "{S} wrote the quarterly goals document for the team.",
        ),
    ),
    Kind(
        "manager",
        ("user",),
        ("manager", "boss", "report"),
        (
            "Rita Gomez",
            "Samuel Osei",
            "Yuki Tanaka",
            "Ben Carter",
            "Leila Nasser",
            "Igor Petrov",
            "Chloe Martin",
            "Hannah Schulz",
        ),
        (
            "{P} new manager is {v}.",
            "{S} had the first one-on-one with {v}, the new manager, today.",
            "{v} approved the holiday request, the first thing as {P} manager.",
            "{S} was assigned to report to {v} as manager.",
        ),
        ("{old} left the company and {v} took over as {P} manager.", "{S} got a new manager: {v} instead of {old}."),
        (
            "The one-on-ones are every other week now.",
            "There is a lot more feedback than before.",
            "The team seems happy with the change.",
        ),
        (
            "Who is {Q}'s manager now?",
            "Which manager does {Q} report to these days?",
            "Who is the manager of {Q} at the moment?",
        ),
        (
            "{S} asked the manager for feedback after the presentation.",
            "{S} prepared slides for the performance review with the boss.",
            "{P} team lunch with the manager was moved to Friday.",
        ),
    ),
    Kind(
        "book",
        ("user", "partner"),
        ("book", "read", "novel"),
        (
            "Dune",
            "Middlemarch",
            "The Overstory",
            "Project Hail Mary",
            "Piranesi",
            "Beloved",
            "The Left Hand of Darkness",
            "Circe",
        ),
        (
            "{S} started reading the book {v} on the train.",
            "{v} is the book on {P} nightstand right now.",
            "{S} borrowed {v} from the library, a great book so far.",
            "{S} stayed up far too late with {v}, the book is gripping.",
        ),
        ("{S} finished {old} and moved on to the next book, {v}.", "{S} put {old} down; {v} is the current book."),
        (
            "The first chapters are slow, but then it takes off.",
            "The audiobook helps on the commute.",
            "A friend recommended it months ago.",
        ),
        (
            "What book is {Q} reading now?",
            "Which book is {Q} in the middle of these days?",
            "What book is {Q} reading at the moment?",
        ),
        (
            "{S} went to a bookshop and came out with no book at all.",
            "{P} reading list keeps getting longer.",
            "{S} joined a book club but missed the first meeting.",
        ),
    ),
    Kind(
        "passwords",
        ("user", "colleague"),
        ("password", "login"),
        ("1Password", "Bitwarden", "KeePassXC", "LastPass", "Dashlane", "Proton Pass"),
        (
            "{S} moved every login and password into {v}.",
            "{P} passwords are stored in {v}.",
            "{S} set up {v} on every device for the passwords.",
            "{S} paid for a {v} family subscription to manage passwords.",
        ),
        (
            "{S} left {old} after the breach and put the passwords in {v}.",
            "{S} exported the password vault from {old} into {v}.",
        ),
        (
            "Autofill works on the phone as well.",
            "Sharing with the family is finally easy.",
            "It took an evening to clean up the duplicates.",
        ),
        (
            "Which password manager does {Q} use now?",
            "Where does {Q} keep passwords these days?",
            "What password tool does {Q} store logins in at the moment?",
        ),
        (
            "{S} got locked out of the email account, wrong password.",
            "{S} turned on two-factor login everywhere.",
            "{P} work laptop asked for a password change.",
        ),
    ),
    Kind(
        "notes_app",
        ("user", "friend"),
        ("note",),
        ("Obsidian", "Notion", "Logseq", "Bear", "Evernote", "Apple Notes", "OneNote", "Joplin"),
        (
            "{S} moved the journal into {v}, for all the notes.",
            "{P} notes all live in {v}.",
            "{S} set up {v} with daily note templates.",
            "{S} wrote the meeting notes in {v}.",
        ),
        ("{S} migrated the notes from {old} to {v}.", "{S} abandoned {old}; notes go into {v} now."),
        (
            "Search is fast and the sync just works.",
            "Linking ideas together is the best part.",
            "It took a weekend to import everything.",
        ),
        (
            "Which note-taking app does {Q} use now?",
            "Where does {Q} write notes these days?",
            "What app is {Q} keeping notes in at the moment?",
        ),
        (
            "{S} lost a page of handwritten notes.",
            "{S} tried to organise the desktop folders and the notes.",
            "{P} to-do note has forty items.",
        ),
    ),
    Kind(
        "os",
        ("user", "colleague"),
        ("operating system", "system", "computer"),
        ("Linux Mint", "macOS", "Windows 11", "Fedora", "Ubuntu", "Arch Linux", "Pop!_OS", "ChromeOS"),
        (
            "{S} installed {v} on the home computer as the operating system.",
            "{P} desktop runs {v} as the operating system.",
            "{S} spent the weekend getting the {v} operating system set up.",
            "{S} reinstalled the whole operating system, {v} this time.",
        ),
        (
            "{S} wiped {old} and went with {v} as the operating system.",
            "{S} moved the computer's operating system from {old} to {v}.",
        ),
        (
            "Everything boots in seconds now.",
            "The printer even works without a driver hunt.",
            "It took a few days to find all the shortcuts.",
        ),
        (
            "Which operating system does {Q} run now?",
            "What operating system does {Q} have on the computer these days?",
            "Which operating system is {Q} using at the moment?",
        ),
        (
            "{S} fought with a printer driver on the computer for an hour.",
            "{S} updated every app on the computer.",
            "{P} computer monitor started flickering.",
        ),
    ),
    Kind(
        "pottery",
        ("user", "sister"),
        ("pottery",),
        (
            "Monday evenings",
            "Tuesday evenings",
            "Wednesday mornings",
            "Thursday evenings",
            "Saturday mornings",
            "Sunday afternoons",
            "Friday evenings",
        ),
        (
            "{P} pottery class is on {v}.",
            "{S} signed up for the pottery session on {v}.",
            "The studio booked {O} for pottery on the wheel on {v}.",
            "Clay and glazes, pottery on {v} for {O}.",
        ),
        ("{P} pottery class moved from {old} to {v}.", "Pottery switched from {old} to {v} for {O}."),
        (
            "The teacher lets everyone take a piece home each month.",
            "The wheel is harder than it looks.",
            "The class is small, six people at most.",
        ),
        (
            "On which day does {Q} go to pottery now?",
            "When does {Q} have pottery these days?",
            "Which day is {Q} doing pottery at the moment?",
        ),
        (
            "{S} made a lopsided bowl at the pottery studio.",
            "{S} bought a pottery glaze set online.",
            "{P} clay sculpture cracked in the pottery kiln.",
        ),
    ),
    Kind(
        "internet",
        ("user", "dad"),
        ("internet", "broadband"),
        ("Comcast", "Vodafone", "Virgin Media", "Verizon Fios", "Hyperoptic", "Starlink", "AT&T"),
        (
            "{S} signed a contract with {v} for home internet.",
            "{P} broadband internet comes from {v}.",
            "The {v} technician installed a new internet router for {O}.",
            "{S} got {v} internet connected at home.",
        ),
        (
            "{S} cancelled {old} and went with {v} for internet.",
            "{S} switched internet providers, {old} out and {v} in.",
        ),
        (
            "Video calls never drop any more.",
            "The installation took less than an hour.",
            "It costs a little more, but it is worth it.",
        ),
        (
            "Which internet provider does {Q} use now?",
            "Who does {Q} get internet from these days?",
            "Which internet company is {Q} with at the moment?",
        ),
        (
            "{S} restarted the internet router three times during the call.",
            "{S} complained about the broadband speed in the bedroom.",
            "{P} neighbours kept asking for the Wi-Fi password, as if the internet were free.",
        ),
    ),
    Kind(
        "race",
        ("user", "friend"),
        ("race", "train", "run"),
        ("a 5K", "a 10K", "a half marathon", "a marathon", "an ultramarathon", "a triathlon", "a trail race"),
        (
            "{S} registered for {v}, the race is in the autumn.",
            "{P} training plan builds toward {v}, the big race.",
            "{S} did the long training run to get ready for the race, {v}.",
            "Race day for {O} will be {v}.",
        ),
        ("{S} gave up on {old}; the race is {v} now.", "{S} switched the race from {old} to {v}."),
        (
            "The long runs are on Sunday mornings.",
            "A coach sends a new plan every week.",
            "The knee is holding up so far.",
        ),
        (
            "What race is {Q} training for now?",
            "Which race is {Q} preparing for these days?",
            "Which race is {Q} running towards at the moment?",
        ),
        (
            "{S} bought new running socks.",
            "{S} went for a run in the rain and caught a cold.",
            "{P} knee felt stiff after the training weekend.",
        ),
    ),
    Kind(
        "takeaway",
        ("user", "partner"),
        ("takeaway", "food", "order", "eat"),
        (
            "the Thai place on Elm Street",
            "a ramen bar downtown",
            "the Lebanese grill",
            "the pizza truck",
            "a taqueria near the station",
            "the sushi counter at the market",
            "the Ethiopian restaurant",
        ),
        (
            "{S} ordered takeaway from {v} three Fridays in a row.",
            "{P} go-to takeaway is {v}.",
            "{S} took the whole family to eat at {v}, the favourite takeaway.",
            "Dinner tonight for {O} came from {v}, the usual takeaway.",
        ),
        (
            "{S} stopped ordering from {old}; {v} is the takeaway now.",
            "{S} replaced {old} with {v} as the Friday takeaway.",
        ),
        (
            "The portions are huge and it is never late.",
            "They know the order without asking now.",
            "The spicy dishes are the best thing on the menu.",
        ),
        (
            "Where does {Q} get takeaway from now?",
            "Which takeaway does {Q} order food from these days?",
            "What is the takeaway {Q} likes to eat at the moment?",
        ),
        (
            "{S} cooked at home all week to save on takeaway.",
            "{S} had terrible food at the airport.",
            "{P} takeaway leftovers were gone by morning.",
        ),
    ),
    Kind(
        "show",
        ("user", "partner", "brother"),
        ("show", "watch", "series"),
        ("Severance", "The Bear", "Succession", "Slow Horses", "Shogun", "The Crown", "Fleabag", "Dark"),
        (
            "{S} binged three episodes of {v} last night, what a show.",
            "{P} current show is {v}.",
            "{S} started watching the show {v} on the weekend.",
            "{S} can't stop talking about {v}, the best show in years.",
        ),
        ("{S} finished {old} and moved on to watching the show {v}.", "{S} abandoned {old}; the new show is {v}."),
        (
            "The second season is even better than the first.",
            "Every episode ends on a cliffhanger.",
            "The soundtrack alone is worth it.",
        ),
        (
            "What show is {Q} watching now?",
            "Which show is {Q} into these days?",
            "Which show is {Q} watching at the moment?",
        ),
        (
            "{S} fell asleep in front of the TV watching the news.",
            "{P} streaming subscription expired mid-series.",
            "{S} bought a new sofa for watching movies.",
        ),
    ),
    Kind(
        "degree",
        ("user", "brother", "sister"),
        ("degree", "stud"),
        ("computer science", "architecture", "nursing", "law", "economics", "graphic design", "marine biology"),
        (
            "{S} enrolled in a {v} degree at the university.",
            "{P} degree is in {v}.",
            "{S} sat the first {v} exam of the degree.",
            "{S} bought all the {v} textbooks for the new degree.",
        ),
        ("{S} transferred degrees, out of {old} into {v}.", "{S} changed degrees, {old} to {v}."),
        (
            "The lectures are hard, but the people are great.",
            "There is an exam every six weeks.",
            "The library is open until midnight, luckily.",
        ),
        (
            "What degree is {Q} studying now?",
            "Which degree subject does {Q} study these days?",
            "What degree is {Q} working towards at the moment?",
        ),
        (
            "{S} pulled an all-nighter studying in the library.",
            "{P} student loan paperwork arrived.",
            "{S} went to a campus party after the degree exams.",
        ),
    ),
)

REACTIONS = (  # the friend's reply to a statement: real talk reacts
    "{F}: Whoa, {v}? That's a big change!",
    "{F}: Nice! How is that going so far?",
    "{F}: Oh cool, I didn't see that coming.",
    "{F}: That's great news, tell me everything.",
    "{F}: Really? What made you go for {v}?",
    "{F}: Ha, I remember you talking about that. Good for you!",
)

END = dt.datetime(2024, 11, 30, 18, 0, tzinfo=dt.UTC)  # the newest statement; "now" is a day later
GAP_DAYS = (70, 120)  # between two statements of a fact (longer when those days are taken): months apart
NEWEST_AGE_DAYS = (2, 170)  # the newest statement's age at "now" (2-statement facts; 3-statement: 2-60)
SPAN_DAYS = 420  # distractor and filler notes fall in the last SPAN_DAYS before END
CHANGE_SHARE = 0.3  # later statements that name the old value ("traded in the Civic for a Golf")


# Value words too common to keep out of the filler ("the", "team", "music"...); every other word
# of any value ("yoga", "guitar", "Lisbon", "vegan") is kept out of it, so the real talk around
# the facts never states a rival value of one of them by accident.
GENERIC_WORDS = frozenset(
    "the and air car city computer dark design edge focus free friday growth hand hospital idea left local low "
    "media model monday music near notes nothing pass phone place platform project pro restaurant road saturday "
    "shop site slow small studio sunday team tools train bike data union credit".split()
)


def person_forms(person: str) -> dict[str, str]:
    s, o, p, q = PEOPLE[person]
    return {"S": s, "O": o, "P": p, "Q": q}


def fill(template: str, person: str, **values: str) -> str:
    text = template.format(**person_forms(person), **values)
    return text[0].upper() + text[1:]


# --------------------------------------------------------------------------- filler talk


@dataclass(frozen=True)
class Turn:
    speaker: str  # "me" for the user (the conversation's first speaker), else the friend's name
    text: str


@dataclass(frozen=True)
class Session:
    """One LoCoMo session: consecutive turns between the user and one friend."""

    source: str  # "<sample_id>/session_<n>"
    friend: str
    turns: tuple[Turn, ...]


def load_sessions(data: Path) -> list[Session]:
    """LoCoMo's sessions as filler, read in place (never copied anywhere but a generated vault)."""
    with (data / "locomo" / "locomo10.json").open(encoding="utf-8") as fh:
        raw = json.load(fh)
    sessions: list[Session] = []
    for item in raw:
        conv = item["conversation"]
        me, friend = str(conv["speaker_a"]), str(conv["speaker_b"])
        keys = sorted(
            (k for k, v in conv.items() if re.fullmatch(r"session_\d+", k) and isinstance(v, list) and v),
            key=lambda k: int(k.split("_")[1]),
        )
        for key in keys:
            turns = tuple(
                Turn("me" if t.get("speaker") == me else friend, " ".join(str(t.get("text", "")).split()))
                for t in conv[key]
                if str(t.get("text", "")).strip()
            )
            if len(turns) >= 4:
                sessions.append(Session(f"{item['sample_id']}/{key}", friend, turns))
    return sessions


# --------------------------------------------------------------------------- the generated notes


@dataclass
class Note:
    """One generated note, style-independent: its time and blocks of `speaker: text` lines."""

    when: dt.datetime
    blocks: list[list[str]]
    friend: str
    role: str  # "statement", "distractor" or "filler"
    facts: list[str] = field(default_factory=list)  # ids of the facts it states (at most one)

    def body(self) -> str:
        return "\n\n".join("\n".join(block) for block in self.blocks) + "\n"


@dataclass(frozen=True)
class Fact:
    """One changing fact and its question; `sentences`, `values` and `dates` oldest first."""

    id: str  # "<vault>/<kind>"
    vault: str
    kind: str
    person: str
    question: str
    values: tuple[str, ...]
    sentences: tuple[str, ...]  # each statement as written (the `me:` line without `me: `)
    dates: tuple[dt.datetime, ...]
    notes: tuple[int, ...]  # index of each statement's note in its vault's notes
    distractor_notes: tuple[int, ...]

    @property
    def answer(self) -> str:
        return self.values[-1]


@dataclass(frozen=True)
class Generated:
    """One vault's notes and facts."""

    name: str
    notes: list[Note]
    facts: list[Fact]
    now: dt.datetime


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2}


def value_words() -> frozenset[str]:
    """Words filler talk must not contain: every value's, but the generic ones."""
    return frozenset(w for kind in KINDS for v in kind.values for w in _words(v)) - GENERIC_WORDS


def _topic_pattern() -> re.Pattern[str]:
    """Any kind's key words (short ones as whole words with common endings, longer ones as
    prefixes): filler that talks about cars, jobs or phones would state rival facts about "me"
    (each LoCoMo conversation's "me" is a different person), so the filler never does."""
    alts = sorted(
        {kw if len(kw) >= 5 else kw + r"(?:s|es|ed|ing|er|ers|e|en)?\b" for kind in KINDS for kw in kind.keywords},
        key=len,
        reverse=True,
    )
    return re.compile(r"\b(?:" + "|".join(alts) + ")", re.I)


TOPIC = _topic_pattern()


MAX_FILLER_WORDS = 45  # LoCoMo's turns run to 100+ words; chat notes are mostly shorter (median 20)


def clean_turn(text: str, avoid: Set[str]) -> bool:
    """A filler turn states nothing any fact is about (no value word, no key word) and is not
    one of LoCoMo's few very long monologues."""
    return len(text.split()) <= MAX_FILLER_WORDS and not (_words(text) & avoid) and TOPIC.search(text) is None


def _filler_block(rng: random.Random, sessions: Sequence[Session], avoid: Set[str]) -> tuple[str, list[str]]:
    """3-6 turns of one of `sessions`, in order from a random point, skipping any that is not
    `clean_turn` (so a block reads as a stretch of talk with a few turns left out)."""
    n = rng.randint(3, 6)
    for _ in range(50):  # a session with enough clean turns
        s = rng.choice(sessions)
        start = rng.randrange(0, len(s.turns))
        turns = [t for t in (s.turns[start:] + s.turns[:start]) if clean_turn(t.text, avoid)][:n]
        if len(turns) >= 2:
            break
    return s.friend, [f"{t.speaker}: {t.text}" for t in turns]


def _note(
    rng: random.Random,
    sessions: Sequence[Session],
    when: dt.datetime,
    role: str,
    lines: list[str],
    avoid: Set[str],
    exchange: Sequence[str] = (),
) -> Note:
    """2-4 blocks of real talk with one friend; each of `lines` goes inside a random block, between two turns,
    and `exchange` (lines with {F} for the friend) becomes a block of its own between them."""
    # One friend per note (one LoCoMo conversation), several of its sessions: several topics.
    friend = rng.choice(sessions).friend
    theirs = [s for s in sessions if s.friend == friend]
    blocks = [_filler_block(rng, theirs, avoid)[1] for _ in range(rng.randint(2, 4))]
    for line in lines:
        block = rng.choice(blocks)
        block.insert(rng.randint(1, max(1, len(block) - 1)), f"me: {line}")
    if exchange:
        blocks.insert(rng.randint(1, len(blocks)), [line.replace("{F}", friend) for line in exchange])
    return Note(when=when, blocks=blocks, friend=friend, role=role)


def generate_updates_hard(
    sessions: Sequence[Session], vaults: int = 3, kinds: int | None = None, seed: int = 11, filler_notes: int = 10
) -> list[Generated]:
    """The vaults' notes and facts, pure and deterministic for (sessions, vaults, kinds, seed).

    Each vault holds one fact of each of the first `kinds` kinds (all by default), about a
    different person of the kind's people in each vault (the user in the first), so no two
    facts of one vault compete for the same question: a vault is one user's memory, and
    there are `vaults` of them. `now` is the same for all: a day after the newest statement.
    """
    rng = random.Random(seed)
    common = value_words()
    out = []
    for v in range(vaults):
        chosen = [(kind, kind.people[v % len(kind.people)]) for kind in KINDS[:kinds]]
        out.append(_generate_vault(rng, f"v{v + 1}", chosen, sessions, common, filler_notes, newest_of_all=v == 0))
    return out


def _generate_vault(
    rng: random.Random,
    name: str,
    chosen: Sequence[tuple[Kind, str]],
    sessions: Sequence[Session],
    common: Set[str],
    filler_notes: int,
    newest_of_all: bool,
) -> Generated:
    taken_days: set[dt.date] = set()

    def free_day(lo: dt.datetime, hi: dt.datetime) -> dt.datetime:
        """A random day in [lo, hi] that no note has yet (one note per day: the journal rendering
        has one file per day); the window widens into the past when it is full."""
        for widen in range(0, 400, 5):
            start = lo - dt.timedelta(days=widen)
            free = [
                start + dt.timedelta(days=d)
                for d in range((hi - start).days + 1)
                if (start + dt.timedelta(days=d)).date() not in taken_days
            ]
            if free:
                day = rng.choice(free)
                taken_days.add(day.date())
                return day
        raise RuntimeError("no free day left: too many notes for the span")

    def at(day: dt.datetime) -> dt.datetime:
        return day.replace(hour=rng.randint(8, 21), minute=rng.choice((0, 10, 20, 30, 40, 50)))

    notes: list[Note] = []
    facts: list[Fact] = []
    plans = []
    if newest_of_all:
        taken_days.add(END.date())  # the first fact's newest statement is the newest of all
    for i, (kind, person) in enumerate(chosen):
        n = 3 if rng.random() < 0.2 else 2
        lo_age, hi_age = NEWEST_AGE_DAYS if n == 2 else (NEWEST_AGE_DAYS[0], 60)
        first_of_all = newest_of_all and i == 0
        days = [END if first_of_all else free_day(END - dt.timedelta(days=hi_age), END - dt.timedelta(days=lo_age))]
        for _ in range(n - 1):
            days.append(free_day(days[-1] - dt.timedelta(days=GAP_DAYS[1]), days[-1] - dt.timedelta(days=GAP_DAYS[0])))
        plans.append((kind, person, n, days[::-1], first_of_all))
    for kind, person, n, days, first_of_all in plans:
        fact_id = f"{name}/{kind.name}"
        values = rng.sample(kind.values, n)
        templates = rng.sample(kind.statements, n)
        details = rng.sample(kind.details, n)
        reactions = rng.sample(REACTIONS, n)
        avoid = set(common) | set().union(*(_words(v) for v in kind.values))
        sentences, dates, idx = [], [], []
        for j, value in enumerate(values):
            if j > 0 and rng.random() < CHANGE_SHARE:
                sentence = fill(rng.choice(kind.changes), person, v=value, old=values[j - 1])
            else:
                sentence = fill(templates[j], person, v=value)
            when = END if (first_of_all and j == n - 1) else at(days[j])
            # The statement comes up in talk: said, reacted to, followed up; a block of its own
            # among blocks of other talk.
            exchange = [f"me: {sentence}", reactions[j].replace("{v}", value), f"me: {details[j]}"]
            notes.append(_note(rng, sessions, when, "statement", [], avoid, exchange))
            notes[-1].facts.append(fact_id)
            sentences.append(sentence)
            dates.append(when)
            idx.append(len(notes) - 1)
        question = fill(rng.choice(kind.questions), person)
        facts.append(
            Fact(
                fact_id,
                name,
                kind.name,
                person,
                question,
                tuple(values),
                tuple(sentences),
                tuple(dates),
                tuple(idx),
                (),
            )
        )
    # Distractors: a note of their own per fact, and some statement notes carry another fact's.
    first = END - dt.timedelta(days=SPAN_DAYS)
    for i, (kind, person, _n, _days, _first) in enumerate(plans):
        avoid = set(common) | set().union(*(_words(v) for v in kind.values))
        line = fill(rng.choice(kind.distractors), person)
        day = free_day(first, END - dt.timedelta(days=1))
        notes.append(_note(rng, sessions, at(day), "distractor", [line], avoid))
        facts[i] = replace(facts[i], distractor_notes=(len(notes) - 1,))
    for note in [n for n in notes if n.role == "statement"]:
        others = [p for f, p in zip(facts, plans, strict=True) if f.id not in note.facts]
        if others and rng.random() < 0.35:
            kind, person = rng.choice(others)[:2]
            block = rng.choice([b for b in note.blocks if len(b) >= 2])
            block.insert(rng.randint(1, len(block) - 1), f"me: {fill(rng.choice(kind.distractors), person)}")
    for _ in range(filler_notes):
        day = free_day(first, END - dt.timedelta(days=1))
        notes.append(_note(rng, sessions, at(day), "filler", [], common))
    return Generated(name=name, notes=notes, facts=facts, now=END + dt.timedelta(days=1))


# --------------------------------------------------------------------------- rendering and the vault

STYLES = ("frontmatter", "journal")


def note_paths(gen: Generated, style: str, seed: int = 11) -> list[str]:
    """Vault-relative path of each note: undated names (numbered in a shuffled order, so the
    name says nothing about time) for `frontmatter`, `journal/YYYY-MM-DD.md` for `journal`."""
    if style == "journal":
        return [f"journal/{n.when:%Y-%m-%d}.md" for n in gen.notes]
    if style != "frontmatter":
        raise ValueError(f"style must be one of {STYLES}, not {style!r}")
    numbers = list(range(1, len(gen.notes) + 1))
    random.Random(seed + 1).shuffle(numbers)
    return [f"notes/chat with {n.friend.lower()} {k:03d}.md" for n, k in zip(gen.notes, numbers, strict=True)]


def render(gen: Generated, style: str, seed: int = 11) -> dict[str, str]:
    """{vault path: file text} for one style."""
    files = {}
    for path, note in zip(note_paths(gen, style, seed), gen.notes, strict=True):
        fm = f"---\ncreated: {iso(note.when)}\n---\n" if style == "frontmatter" else ""
        files[path] = fm + note.body()
    return files


@dataclass(frozen=True)
class Question:
    """A fact as the benchmark asks it: its vault and its notes' paths there."""

    fact: Fact
    vault: Path
    statements: tuple[str, ...]  # vault-relative paths, oldest first
    distractors: tuple[str, ...]

    @property
    def query(self) -> str:
        return self.fact.question


@dataclass(frozen=True)
class HardBench:
    root: Path
    style: str
    vaults: list[Path]
    questions: list[Question]
    now: dt.datetime
    n_notes: int
    generated: list[Generated]


def build_updates_hard(
    data: Path,
    root: Path,
    *,
    style: str = "frontmatter",
    quick: bool = False,
    seed: int = 11,
    vaults: int | None = None,
    kinds: int | None = None,
    sessions: Sequence[Session] | None = None,
) -> HardBench:
    """Write the vaults for `style` under `root/<vault>/` and return the questions (the
    calibrator's entry point; `bench.runners.updates_hard.evaluate` asks them).

    Defaults: 3 vaults of one fact per kind (81 facts); `quick`: 1 vault, 12 kinds. `sessions`
    defaults to LoCoMo's, read from `data`. Vaults are synced, not rewritten (unchanged files
    keep their bytes); journal files get the note's time as their modification time, since
    nothing else dates them.
    """
    sessions = sessions if sessions is not None else load_sessions(data)
    gens = generate_updates_hard(
        sessions,
        vaults=vaults or (1 if quick else 3),
        kinds=kinds if kinds is not None else (12 if quick else None),
        seed=seed,
        filler_notes=4 if quick else 10,
    )
    questions: list[Question] = []
    folders = []
    n_notes = 0
    for gen in gens:
        folder = root / gen.name
        folders.append(folder)
        files = render(gen, style, seed)
        sync_vault(folder, files)
        paths = note_paths(gen, style, seed)
        if style == "journal":
            for path, note in zip(paths, gen.notes, strict=True):
                ts = note.when.timestamp()
                os.utime(folder / path, (ts, ts))
        questions += [
            Question(f, folder, tuple(paths[i] for i in f.notes), tuple(paths[i] for i in f.distractor_notes))
            for f in gen.facts
        ]
        n_notes += len(files)
    for stale in root.iterdir() if root.is_dir() else ():
        if stale.is_dir() and stale not in folders and not stale.name.startswith("."):
            shutil.rmtree(stale)  # a vault of an earlier, larger run
    return HardBench(
        root=root, style=style, vaults=folders, questions=questions, now=gens[0].now, n_notes=n_notes, generated=gens
    )
