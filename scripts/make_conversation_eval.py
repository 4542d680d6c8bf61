#!/usr/bin/env python3
"""Write the long-conversation retrieval dataset (tests/data/conversations/) from a fixed seed.

Ten conversations (by default) between two named people — the user and a friend — over about a
year: 24-28 dated sessions each, 300+ turns, facts and events planted among small talk that
reuses their words, some facts changing over time. Each conversation gets 100+ questions typed
`single_hop`, `multi_hop`, `temporal` and `paraphrased`, whose answers are turn refs
(`c03/s12/t7`). Format and rules: tests/data/conversations/README.md.

Deterministic (one seed, no set iteration order in the output); needs only the standard library
and lobug's stopword list. Refuses to write
a dataset that breaks its rules (see `check`): every evidence ref exists, every question has
evidence, no answer leaks into a turn that is not evidence, paraphrased questions share no
content word with their evidence, and at least a third of all questions share none.

    python scripts/make_conversation_eval.py              # rewrite tests/data/conversations/
    python scripts/make_conversation_eval.py --check      # fail (exit 1) if the files are stale
    python scripts/make_conversation_eval.py --out /tmp/conv --conversations 12
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "conversations"
SEED = 20250301
CONVERSATIONS = 10
TYPES = ("single_hop", "multi_hop", "temporal", "paraphrased")
FILES = ("conversations.jsonl", "questions.jsonl", "README.md")

sys.path.insert(0, str(ROOT))
from lobug.memory.search.fts import STOPWORDS  # noqa: E402

# -- content words --------------------
# A word lobug's full-text search ignores (its stopwords) is never counted as shared.


def _plural(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def content_words(text: str) -> set[str]:
    """Lowercased words minus stopwords, plurals stripped (the issue's definition)."""
    words = re.findall(r"[a-z0-9]+", text.lower().replace("'", ""))
    return {_plural(w) for w in words if w not in STOPWORDS}


def _related(a: str, b: str) -> bool:
    """Stricter than equality: one is a prefix of the other (4+ letters: what lobug's BM25
    prefix query matches, and -ed/-ing/-er forms), or a long common stem ("proposal" and
    "proposed")."""
    if a == b:
        return True
    short, long_ = sorted((a, b), key=len)
    if len(short) >= 4 and long_.startswith(short):
        return True
    common = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common += 1
    return common >= 5 and common >= 0.7 * len(short)


def shared_words(question: str, turn: str) -> list[str]:
    """The question's content words that the turn shares (strictly, see `_related`)."""
    theirs = content_words(turn)
    return sorted(w for w in content_words(question) if any(_related(w, t) for t in theirs))


# -- the pools each conversation's world is drawn from --------------------
USERS = [
    ("Nadia", "she"), ("Marcus", "he"), ("Priya", "she"), ("Owen", "he"), ("Sofia", "she"),
    ("Daniel", "he"), ("Aisha", "she"), ("Liam", "he"), ("Chloe", "she"), ("Mateo", "he"),
    ("Hannah", "she"), ("Kenji", "he"), ("Ruth", "she"), ("Idris", "he"),
]  # fmt: skip
FRIENDS = [
    ("Tom", "he"), ("Rosa", "she"), ("Ben", "he"), ("Yuki", "she"), ("Jamal", "he"),
    ("Ellie", "she"), ("Farid", "he"), ("Greta", "she"), ("Luca", "he"), ("Maya", "she"),
    ("Sean", "he"), ("Ingrid", "she"), ("Dev", "he"), ("Carla", "she"),
]  # fmt: skip
PARTNER_NAMES = [
    "Chris", "Sam", "Alex", "Jordan", "Robin", "Jamie", "Kit", "Morgan", "Dana", "Noor",
    "Eli", "Frankie", "Rowan", "Ash",
]  # fmt: skip
PARTNER_RELS = ["partner", "wife", "husband", "girlfriend", "boyfriend"]
# (job, what the spouse does: only for the answer)
PARTNER_JOBS = [
    "paramedic", "architect", "primary school teacher", "physiotherapist", "electrician",
    "accountant", "pharmacist", "chef", "dental hygienist", "air traffic controller",
    "solicitor", "firefighter",
]  # fmt: skip
SIBLINGS = [
    ("sister", "Lena"), ("brother", "Theo"), ("sister", "Mira"), ("brother", "Callum"),
    ("sister", "Bea"), ("brother", "Rafael"), ("sister", "Ines"), ("brother", "Oskar"),
    ("sister", "Tamsin"), ("brother", "Felix"), ("sister", "Amara"), ("brother", "Joel"),
]  # fmt: skip
PROPOSALS = [
    "on a beach in Cornwall", "at the top of Arthur's Seat", "in the middle of a ceilidh",
    "on a ferris wheel in Blackpool", "at a petrol station of all places",
    "on a ski lift in the Alps", "during a power cut", "at their favourite chip shop",
    "on a canal boat", "in front of a Vermeer painting",
]  # fmt: skip
PARENT_TOWNS = [
    "Galway", "Aberdeen", "Whitby", "Penzance", "Keswick", "Tenby", "Stirling", "Ludlow",
    "Harrogate", "Cromer", "Oban", "Hexham",
]  # fmt: skip
COMPANIES = [
    "Brightwell Analytics", "Harbour and Finch", "Northgate Logistics", "Tallis Studio",
    "Kestrel Bank", "Quill Media", "Ferncastle Council", "Orbit Games", "Lumen Labs",
    "Cobalt Insurance", "Marlow Engineering", "Saffron Foods", "Pinewood Architects",
    "Greyfriars Publishing", "Atlas Freight", "Hollybrook Clinic", "Juniper Software",
    "Westmoor Energy", "Copperline Telecom", "Bramley Estates",
]  # fmt: skip
ROLES = [
    "data analyst", "graphic designer", "project manager", "junior architect", "HR advisor",
    "software tester", "marketing coordinator", "lab technician", "copy editor",
    "logistics planner", "payroll officer", "UX researcher", "quantity surveyor",
    "customer success lead", "sound engineer", "grant writer",
]  # fmt: skip
CITIES = [
    "Leeds", "Bristol", "Glasgow", "Manchester", "Cardiff", "Brighton", "Nottingham",
    "Sheffield", "Norwich", "Dundee", "Belfast", "Liverpool", "Newcastle", "Exeter",
    "Leicester", "Swansea",
]  # fmt: skip
CARS = [
    "Honda Jazz", "Ford Fiesta", "VW Golf", "Toyota Yaris", "Skoda Octavia", "Nissan Leaf",
    "Kia Niro", "Mazda MX-5", "Volvo V70", "Fiat Panda", "Renault Zoe", "Peugeot 208",
]  # fmt: skip


@dataclass(frozen=True)
class Pet:
    species: str
    breed: str  # as said in the evidence turn (the answer to "what kind")
    para: str  # a description sharing no word with the breed


PETS = [
    Pet("dog", "greyhound", "retired racer"),
    Pet("dog", "beagle", "floppy-eared scent hound"),
    Pet("dog", "border collie", "sheepdog"),
    Pet("dog", "dachshund", "sausage-shaped hound"),
    Pet("dog", "whippet", "slim sprinting hound"),
    Pet("dog", "staffie", "muscular terrier"),
    Pet("cat", "Maine Coon", "enormous fluffy feline"),
    Pet("cat", "Siamese", "blue-eyed feline"),
    Pet("cat", "ginger tabby", "orange-striped feline"),
    Pet("rabbit", "lop-eared rabbit", "bunny"),
    Pet("tortoise", "Hermann's tortoise", "shelled reptile"),
    Pet("parrot", "African grey parrot", "talking bird"),
    Pet("guinea pig", "guinea pig", "squeaky rodent"),
]
PET_NAMES = [
    "Pepper", "Miso", "Biscuit", "Juniper", "Mabel", "Otis", "Pickle", "Waffles", "Dexter",
    "Hazel", "Noodle", "Bramble", "Ziggy", "Clover", "Fig", "Marmite", "Rolo", "Tilly",
]  # fmt: skip
PET_SOURCES = [
    "from the rescue centre", "from a neighbour who was moving abroad",
    "from a shelter out past the ring road", "from a farm up the valley",
    "from a woman at work whose kids lost interest",
]  # fmt: skip


@dataclass(frozen=True)
class Hobby:
    phrase: str  # "a pottery class"
    short: str  # "pottery"
    para: str  # "working with clay" (no shared word with phrase)


HOBBIES = [
    Hobby("a pottery class", "pottery", "shaping clay"),
    Hobby("salsa lessons", "salsa", "Latin dancing"),
    Hobby("a bouldering course", "bouldering", "indoor rock climbing"),
    Hobby("a community choir", "choir", "group singing"),
    Hobby("a chess club", "chess", "a strategy board game"),
    Hobby("Spanish evening classes", "Spanish", "learning a foreign language"),
    Hobby("a woodworking workshop", "woodworking", "carpentry"),
    Hobby("a beekeeping course", "beekeeping", "looking after hives"),
    Hobby("watercolour classes", "watercolour", "painting with brushes"),
    Hobby("a kayaking club", "kayaking", "paddling a boat"),
    Hobby("a sourdough baking course", "sourdough", "making bread"),
    Hobby("an improv comedy group", "improv", "unscripted theatre"),
    Hobby("a knitting circle", "knitting", "yarn and needles"),
    Hobby("an archery club", "archery", "shooting with a bow"),
    Hobby("a life drawing class", "life drawing", "sketching models"),
]
VENUES = [
    "the community college", "the leisure centre", "a studio near the station",
    "the library", "the church hall on Mill Lane", "the arts centre", "a place by the canal",
    "the sports centre", "a warehouse in the old docks", "the village hall",
]  # fmt: skip


@dataclass(frozen=True)
class Trip:
    dest: str
    para: str  # "in Portugal": the destination, described without its name
    activities: tuple[str, ...]  # "we ..." (past tense)


TRIPS = [
    Trip("Lisbon", "in Portugal", ("ate custard tarts every single morning",
                                "rode the old yellow tram up to the castle")),
    Trip("Kyoto", "in Japan", ("stayed in a temple guesthouse", "saw the bamboo forest at dawn")),
    Trip("Reykjavik", "in Iceland", ("swam in a geothermal lagoon",
                                  "chased the northern lights at 2am")),
    Trip("Barcelona", "in Catalonia", ("queued three hours for the Sagrada Familia",
                                   "ate paella on the beach")),
    Trip("Rome", "in Italy", ("got lost in Trastevere", "did a pasta making class")),
    Trip("Marrakech", "in Morocco", ("haggled for a rug in the souk",
                                  "slept in a riad with a rooftop pool")),
    Trip("Vienna", "in Austria", ("went to the opera in jeans", "ate far too much strudel")),
    Trip("New York", "in the Big Apple", ("walked the High Line", "saw a Broadway show")),
    Trip("Copenhagen", "in Denmark", ("cycled everywhere", "went to Tivoli Gardens")),
    Trip("Crete", "on a Greek island", ("hiked the Samaria gorge", "snorkelled every afternoon")),
    Trip("Seville", "in Andalusia", ("watched a flamenco show", "toured the Alcazar")),
    Trip("Amsterdam", "in the Netherlands", ("hired a canal boat",
                                          "spent a whole day at the Rijksmuseum")),
    Trip("the Isle of Skye", "in the Hebrides", ("climbed the Old Man of Storr",
                                             "saw a golden eagle")),
    Trip("Berlin", "in Germany", ("cycled along the old Wall", "went to a techno club")),
]  # fmt: skip
COMPANIONS_EXTRA = ["my uni friends", "my cousin Petra", "a group from work"]


@dataclass(frozen=True)
class Purchase:
    item: str  # "an upright piano"
    key: str  # "piano"
    para: str  # "a musical instrument with keys"


PURCHASES = [
    Purchase("an upright piano", "piano", "large musical instrument"),
    Purchase("a cargo bike", "cargo bike", "pedal-powered family hauler"),
    Purchase("an espresso machine", "espresso machine", "coffee maker"),
    Purchase("a standing desk", "standing desk", "adjustable workstation"),
    Purchase("a telescope", "telescope", "gadget for stargazing"),
    Purchase("a sewing machine", "sewing machine", "device to make clothes"),
    Purchase("a canoe", "canoe", "small boat"),
    Purchase("a record player", "record player", "turntable for vinyl"),
    Purchase("a rowing machine", "rowing machine", "home gym equipment"),
    Purchase("a pizza oven", "pizza oven", "outdoor wood-fired cooker"),
    Purchase("a drone", "drone", "flying camera gadget"),
    Purchase("a 3D printer", "3D printer", "machine that builds plastic objects layer by layer"),
]
PURCHASE_SOURCES = [
    "off a neighbour", "at a car boot sale", "in the January sales", "second-hand online",
    "from a shop in the arcade", "at an auction", "from a charity shop",
]  # fmt: skip


@dataclass(frozen=True)
class Health:
    evidence: str  # first person, past
    direct_q: str  # "{U}" placeholders
    direct_a: str
    para_q: str
    para_a: str
    when_q: str  # "When did {U} ...?"
    key: str  # answer word that must not leak into other turns
    event: str  # short description for temporal answers


HEALTH = [
    Health("Sprained my ankle playing five-a-side on Tuesday, two weeks on crutches apparently.",
           "How did {U} sprain {pp} ankle?", "playing five-a-side",
           "Which joint did {U} injure, and doing what?", "ankle, at five-a-side",
           "When did {U} sprain {pp} ankle?", "ankle", "sprained an ankle"),
    Health("Broke my wrist falling off my bike in the rain, it's in plaster for six weeks.",
           "How did {U} break {pp} wrist?", "falling off a bike in the rain",
           "What bone injury did {U} suffer?", "a fractured wrist",
           "When did {U} break {pp} wrist?", "wrist", "broke a wrist"),
    Health("The GP says it's asthma, so now I have an inhaler for when I run.",
           "What did the GP diagnose {U} with?", "asthma",
           "Which breathing condition was {U} found to have?", "asthma",
           "When was {U} diagnosed with asthma?", "asthma", "diagnosed with asthma"),
    Health("Had my wisdom teeth out yesterday, I look like a hamster.",
           "Which teeth did {U} have out?", "wisdom teeth",
           "What dental surgery did {U} go through?", "wisdom teeth removal",
           "When did {U} have {pp} wisdom teeth out?", "wisdom", "wisdom teeth out"),
    Health("Started physio for my back, the exercises are humbling.",
           "What is {U} doing physio for?", "the back",
           "Is {U} getting treatment for spinal pain?", "yes, physio",
           "When did {U} start physio?", "physio", "started physio"),
    Health("Got glasses for the first time, I can read road signs again!",
           "What did {U} get for the first time?", "glasses",
           "How did {U} correct failing eyesight?", "with glasses",
           "When did {U} get glasses?", "glasses", "got glasses"),
    Health("Turns out I'm allergic to penicillin, found out the itchy way.",
           "Which medicine is {U} allergic to?", "penicillin",
           "Which antibiotic gives {U} a reaction?", "penicillin",
           "When did {U} find out about the penicillin allergy?", "penicillin",
           "found a penicillin allergy"),
    Health("Pulled a muscle in my shoulder at the gym, can't lift my arm above my head.",
           "Where did {U} pull a muscle?", "the shoulder, at the gym",
           "What strain did {U} get while exercising?", "a pulled shoulder muscle",
           "When did {U} pull {pp} shoulder?", "shoulder", "pulled a shoulder muscle"),
]  # fmt: skip


@dataclass(frozen=True)
class LifeEvent:
    evidence: str  # may use {band}, {time}, {food_bank}
    direct_q: str
    direct_a: str
    para_q: str
    para_a: str
    when_q: str
    key: str
    event: str


BANDS = ["The Velvet Foxes", "Moonlit Harbour", "Paper Lanterns", "Static Orchard",
         "The Hollow Pines", "Neon Swallows"]  # fmt: skip
LIFE_EVENTS = [
    LifeEvent("Ran my first half marathon on Sunday, finished in {time}!",
              "How long did {U}'s first half marathon take?", "{time}",
              "How fast did {U} complete the 21-kilometre road race?", "{time}",
              "When did {U} run a half marathon?", "{time}", "ran a half marathon"),
    LifeEvent("Passed my driving test this morning, first try!",
              "Did {U} need several attempts at the driving test?", "no, first try",
              "On which attempt did {U} earn a motoring licence?", "the first",
              "When did {U} pass {pp} driving test?", "first try", "passed the driving test"),
    LifeEvent("Saw {band} live last night, absolutely incredible.",
              "Which band did {U} see live?", "{band}",
              "What group's gig did {U} attend?", "{band}",
              "When did {U} see {band}?", "{band}", "saw a band live"),
    LifeEvent("I've started volunteering at the {food_bank} food bank on Saturdays.",
              "Where does {U} volunteer?", "the {food_bank} food bank",
              "Which charity does {U} give weekends to?", "the {food_bank} food bank",
              "When did {U} start volunteering?", "{food_bank}", "started volunteering"),
    LifeEvent("Got my results back, I passed the accountancy exam!",
              "Which exam did {U} pass?", "the accountancy exam",
              "Which professional qualification test did {U} get through?", "accountancy",
              "When did {U} pass the accountancy exam?", "accountancy", "passed an exam"),
    LifeEvent("I gave a talk at a conference in front of four hundred people and didn't faint.",
              "How many people did {U} give a talk to?", "four hundred",
              "How big was the audience when {U} spoke publicly?", "four hundred people",
              "When did {U} give the conference talk?", "four hundred", "gave a talk"),
    LifeEvent("We planted an apple tree in the garden in memory of Gran.",
              "What did {U} plant in the garden?", "an apple tree",
              "Which fruit sapling went into {U}'s yard?", "an apple tree",
              "When did {U} plant the apple tree?", "apple", "planted a tree"),
    LifeEvent("Did my first open water swim in the lake, it was freezing.",
              "Where did {U} do {pp} first open water swim?", "in the lake",
              "Did {U} bathe outdoors in cold conditions?", "yes, a lake swim",
              "When did {U} do the open water swim?", "open water", "open water swim"),
]  # fmt: skip
FOOD_BANKS = ["St Anne's", "Hillside", "Riverside", "Eastfield", "Northside"]
TIMES = ["1:58", "2:04", "1:49", "2:11", "1:55"]

# -- filler: small talk that reuses the planted facts' words without their answers
# Each block is (who starts: any | user | friend, lines). Lines alternate speakers. Placeholders:
# {me} the starter's name, {you} the other's, {U} {F} the user and friend, {P} partner, {S}
# sibling, {pet} a pet adopted already, {hobby} a hobby in progress, {item} something bought,
# {dest} a trip still ahead, {town}, {other_city}, {food}, {show}, {day}.
FILLER: list[tuple[str, tuple[str, ...]]] = [
    ("any", ("How's your week going?", "Busy but fine. Yours?", "Honestly, a blur.")),
    ("any", ("Morning! Did you sleep okay?", "Not really, the neighbours had a party.")),
    ("any", ("It's been raining all week here.", "Same, my shoes have given up.")),
    ("any", ("Finally some sun today!", "I know, I sat outside at lunch like a lizard.")),
    ("any", ("What did you have for dinner?", "Just {food}. You?", "Toast. Don't judge.")),
    ("any", ("Have you watched {show} yet?", "Two episodes in, no spoilers please.")),
    (
        "any",
        (
            "I finished {show} last night.",
            "And? Was the ending worth it?",
            "Mostly. The last ten minutes were great.",
        ),
    ),
    ("any", ("Any plans for the weekend?", "Nothing at all and I'm thrilled about it.")),
    (
        "any",
        (
            "Work was brutal today.",
            "Oh no, what happened?",
            "Three meetings about one meeting. Classic.",
        ),
    ),
    (
        "any",
        (
            "My manager wants a new report every Monday now.",
            "Sounds like a full-time job in itself.",
        ),
    ),
    (
        "any",
        (
            "Someone keeps stealing yoghurt from the office fridge.",
            "The fridge thief strikes again! Have you tried labelling it?",
            "Labelled, dated, signed. Still gone.",
        ),
    ),
    (
        "any",
        ("I think I need a holiday.", "Don't we all. Somewhere warm?", "Anywhere without email."),
    ),
    (
        "any",
        (
            "Flights are so expensive this year.",
            "Tell me about it, I looked at trains instead and they're worse.",
        ),
    ),
    (
        "any",
        ("We should plan a trip together at some point.", "Yes! Let's actually do it this time."),
    ),
    (
        "any",
        (
            "My neighbour's dog barks at every delivery van.",
            "Every single one? Impressive commitment.",
        ),
    ),
    (
        "any",
        ("Do you think a cat would be happy in a small flat?", "Depends on the cat, honestly."),
    ),
    (
        "any",
        (
            "Walking the dog at six in the morning builds character.",
            "Whose dog?",
            "The neighbour's. Long story.",
        ),
    ),
    (
        "any",
        (
            "My gym changed the class timetable again.",
            "Annoying. Which class did you lose?",
            "The only one I liked.",
        ),
    ),
    (
        "any",
        (
            "I keep meaning to sign up for some kind of class.",
            "What's stopping you?",
            "Mostly the sofa.",
        ),
    ),
    ("any", ("I've had a cold all week.", "Lemon, honey, sleep. Doctor's orders.")),
    ("any", ("My back is killing me from my desk chair.", "Get a better chair, seriously.")),
    (
        "any",
        (
            "I need to stop buying things online.",
            "What did you buy now?",
            "A lamp shaped like a mushroom.",
        ),
    ),
    ("any", ("Did you see the match on {day}?", "Only the second half. What a finish!")),
    (
        "any",
        (
            "I tried that new bakery near the station.",
            "Any good?",
            "The croissants are worth the queue.",
        ),
    ),
    (
        "any",
        (
            "The traffic this morning was unreal.",
            "Roadworks again?",
            "Roadworks, a broken light and a sheep.",
        ),
    ),
    (
        "any",
        (
            "I've started meal prepping on Sundays.",
            "How long will that last?",
            "Two weeks, probably.",
        ),
    ),
    ("any", ("My phone screen cracked again.", "Third time this year?", "Fourth. Don't ask.")),
    ("any", ("I can't believe it's {day} already.", "This week has gone so fast.")),
    ("any", ("Are you still on that no sugar thing?", "Technically yes. Spiritually no.")),
    (
        "any",
        (
            "My cousin just moved to {other_city}.",
            "Does she like it?",
            "Loves it, says the rent is half.",
        ),
    ),
    (
        "any",
        (
            "A friend of mine adopted a kitten last month, it's pure chaos.",
            "Kittens are tiny tornadoes.",
        ),
    ),
    (
        "friend",
        (
            "My sister bought a new car and named it.",
            "What did she call it?",
            "Gerald. It's a hatchback.",
        ),
    ),
    (
        "any",
        (
            "I'm thinking of learning to cook properly.",
            "Start with eggs. Everything starts with eggs.",
        ),
    ),
    ("any", ("The heating broke again.", "In this weather? Nightmare.")),
    ("any", ("Our landlord finally fixed the leak.", "Only took six months!")),
    (
        "any",
        (
            "I went for a long walk along the river.",
            "Nice, was it busy?",
            "Just me and about a hundred geese.",
        ),
    ),
    ("any", ("Have you been sleeping better?", "A bit. I stopped looking at my phone in bed.")),
    ("any", ("Did you get my voice note?", "Yes, sorry, I'll listen properly tonight.")),
    (
        "any",
        (
            "We had friends over for {food} on {day}.",
            "Fancy! Did it go well?",
            "Nobody got food poisoning, so yes.",
        ),
    ),
    ("any", ("I'm so tired of the news.", "Same. I've switched to crosswords.")),
    ("any", ("Do you remember that awful karaoke night?", "I have tried very hard to forget it.")),
    ("any", ("The new coffee place does oat milk for free.", "That's dangerous information.")),
    (
        "any",
        (
            "I got a parking ticket outside the dentist.",
            "Ouch. While you were inside?",
            "Eleven minutes over.",
        ),
    ),
    (
        "any",
        (
            "Random question: tea or coffee in the morning?",
            "Tea, obviously.",
            "Wrong, but I respect it.",
        ),
    ),
    ("any", ("There's a new Thai place opening on the high street.", "We have to try it.")),
    (
        "any",
        (
            "I fell asleep on the train and missed my stop.",
            "How far did you get?",
            "Two stops. Could have been worse.",
        ),
    ),
    (
        "any",
        ("What are you reading at the moment?", "A thriller my mum lent me, it's silly but fun."),
    ),
    (
        "any",
        (
            "My boss asked if I could work Saturday.",
            "Did you say no?",
            "I said maybe, which means yes.",
        ),
    ),
    ("any", ("How's the family?", "All good, everyone's busy.")),
    (
        "any",
        (
            "The office moved desks around again.",
            "Where are you now?",
            "Next to the printer. Send help.",
        ),
    ),
    ("any", ("Did you book anything for the summer?", "Not yet, still pricing things up.")),
    ("any", ("The vet bill for my parents' cat was eye-watering.", "Pets are expensive.")),
    (
        "any",
        (
            "I've been learning a bit of guitar on YouTube.",
            "Play me something next time.",
            "Give me a year.",
        ),
    ),
    (
        "any",
        (
            "Someone at work is leaving and we're all doing a collection.",
            "Who's leaving?",
            "The one person who knew how the printer works.",
        ),
    ),
    ("any", ("It's so hot I slept on the floor.", "That bad? We've got a fan on all night.")),
    ("any", ("The garden's completely overgrown.", "Ours too, the brambles are winning.")),
    ("any", ("My knee clicks every time I take the stairs now.", "Welcome to your thirties.")),
    ("any", ("Have you ever tried paddleboarding?", "Once. I mostly fell in.")),
    ("any", ("I signed a petition about the bus route.", "The 42? They can't cut that one.")),
    ("any", ("I baked banana bread and it actually worked.", "Save me a slice!")),
    ("any", ("The kids next door are learning the trumpet.", "All of them?", "It feels like it.")),
    ("any", ("I'm trying to drink more water.", "How's that going?", "One glass a day. Progress.")),
    ("any", ("Do you want to get a coffee next week?", "Yes please, {day} works for me.")),
    (
        "any",
        (
            "I spent the whole evening sorting out old photos.",
            "Find anything embarrassing?",
            "So many haircuts.",
        ),
    ),
    ("any", ("My washing machine sounds like a helicopter.", "Might be time for a new one.")),
    (
        "any",
        (
            "I booked a dentist appointment finally.",
            "Brave. When is it?",
            "Next month, so I have time to panic.",
        ),
    ),
    (
        "any",
        (
            "The moving van blocked our whole street today.",
            "Someone new on the road?",
            "Looks like a family with three dogs.",
        ),
    ),
    (
        "any",
        (
            "I've been thinking about getting a bike.",
            "For commuting?",
            "For looking sporty, mostly.",
        ),
    ),
    # the user's own life (the user starts)
    ("user", ("{P} is making {food} tonight, I'm very spoilt.", "Lucky you!")),
    (
        "user",
        (
            "{P} and I are trying to save money this month.",
            "How's that going?",
            "We bought a plant. So, badly.",
        ),
    ),
    (
        "user",
        (
            "I spoke to {S} for an hour last night.",
            "How's {S} doing?",
            "Good, busy, same as always.",
        ),
    ),
    ("user", ("Mum called to ask if I'm eating vegetables.", "Are you?", "Define vegetables.")),
    ("user", ("{pet} stole a sock again.", "Ha! Which one?", "The left one, always the left one.")),
    ("user", ("{pet} has decided the sofa belongs to them now.", "That's fair, honestly.")),
    ("user", ("{pet} woke me up at five this morning.", "Brutal. Hungry?", "Just wanted company.")),
    ("user", ("{pet} had a check-up, all fine.", "Good to hear!")),
    ("user", ("{Hobby} was fun tonight, I'm still rubbish at it.", "Everyone's rubbish at first.")),
    ("user", ("Missed {hobby} this week, work ran late.", "There's always next week.")),
    ("user", ("I'm getting slightly better at {hobby}.", "See! Told you.")),
    ("user", ("The {item} is getting a lot of use.", "Worth every penny then.")),
    ("user", ("I'm not sure I needed the {item}, if I'm honest.", "Too late now!")),
    ("user", ("Still packing for {dest}.", "How long are you away?", "Just over a week.")),
    ("user", ("Counting down the days to {dest}.", "So jealous. Bring me something back!")),
    ("user", ("{after_job}The new job is a lot to learn.", "You'll get there, give it time.")),
    (
        "user",
        (
            "{after_move}Still unpacking boxes in the new place.",
            "The last box never gets unpacked, it's the law.",
        ),
    ),
    (
        "user",
        (
            "Work gossip: my team lead might be leaving.",
            "Ooh, would you go for the job?",
            "Maybe. Don't tell anyone.",
        ),
    ),
    (
        "user",
        (
            "{before_move}I've been thinking about moving somewhere cheaper.",
            "Where would you go?",
            "No idea, that's the problem.",
        ),
    ),
    (
        "user",
        (
            "{before_job}I'm so bored at work, I need a change.",
            "Have you started looking?",
            "Sort of. Mostly daydreaming.",
        ),
    ),
    # the friend asks after the user's news (the friend starts)
    ("friend", ("How's {pet} settling in?", "Great, {pet} basically runs the house now.")),
    ("friend", ("Is {pet} still chewing everything?", "Everything. Including the post.")),
    ("friend", ("How's {hobby} going?", "Slowly! But I really look forward to it.")),
    ("friend", ("Are you still enjoying the {item}?", "I am, no regrets so far.")),
    ("friend", ("{after_job}How's the new job treating you?", "Good! Still learning names.")),
    (
        "friend",
        ("{after_move}How's the new place?", "Getting there, it's starting to feel like home."),
    ),
    ("friend", ("When are you off to {dest} again?", "Soon! I can't wait.")),
    ("friend", ("How's {P}?", "Good, working too much as usual.")),
    ("friend", ("Did you talk to {S} this week?", "Briefly, {S} is up to their eyes in plans.")),
    # the friend's life (the friend starts)
    (
        "friend",
        (
            "My kids have a school trip next week and I'm more nervous than they are.",
            "Where are they going?",
            "A farm. Mostly mud, I expect.",
        ),
    ),
    (
        "friend",
        ("I'm thinking about changing jobs.", "Really? Since when?", "Since about Tuesday."),
    ),
    ("friend", ("My landlord wants to put the rent up again.", "Again? That's outrageous.")),
    (
        "friend",
        ("I've been trying to run twice a week.", "How's it going?", "My knees have opinions."),
    ),
    (
        "friend",
        (
            "My mum's moving in with us for a bit.",
            "How do you feel about that?",
            "Ask me in a month.",
        ),
    ),
    (
        "friend",
        (
            "I broke a glass and stepped on it, so that was my evening.",
            "Ouch! Are you okay?",
            "Fine, just hopping around.",
        ),
    ),
    (
        "friend",
        (
            "We're repainting the living room.",
            "What colour?",
            "Something called 'elephant's breath'. It's grey.",
        ),
    ),
    (
        "friend",
        ("My car made a weird noise all the way home.", "Get it looked at before it gets worse."),
    ),
]
FOODS = ["lasagne", "a curry", "tacos", "risotto", "a roast", "noodles", "shakshuka",
         "dumplings", "fish pie", "chilli", "pad thai", "a stew"]  # fmt: skip
SHOWS = ["The Quiet Coast", "Night Shift", "Glass Harbour", "The Long Field", "Signal Lost",
         "Paper Crowns"]  # fmt: skip
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
OPENERS = [
    ("Hey {you}! Long time no talk, what's new?", "Hey! Not loads, you?"),
    ("Hi {you}, got a minute?", "Always. What's up?"),
    ("Morning {you}!", "Morning! You're up early."),
    ("Evening! How was your day?", "Long. Yours?"),
    ("Hey, are you free for a chat?", "Yes, just made a cup of tea."),
    ("{you}! How are things?", "Good, good. Busy. You?"),
]
CLOSERS = [
    ("Anyway, I should go, talk soon!", "Bye! Speak soon."),
    ("Right, dinner's ready, catch you later.", "Enjoy! Later."),
    ("I need to sleep, night!", "Night night."),
    ("Got to run, chat next week?", "Definitely."),
    ("Okay, back to work for me.", "Good luck!"),
]
BRIDGES = ["So what's new with you?", "Anyway, enough about me, what's going on with you?",
           "Any news?", "How have you been?", "What have you been up to?"]  # fmt: skip
REACTIONS = {
    "pet": [
        "Oh my goodness, you have to send photos!",
        "That's lovely, how are they settling in?",
        "Ah, your place is going to be covered in fur.",
    ],
    "hobby": [
        "Good for you, I'd love to try something like that.",
        "That sounds like fun, let me know how it goes.",
        "Ooh, very cultured.",
    ],
    "trip": [
        "Sounds amazing, I'm so jealous.",
        "Welcome back! You must be shattered.",
        "Show me the photos next time.",
    ],
    "purchase": ["Treat yourself, you deserve it.", "Very grown up of you.", "Was it expensive?"],
    "health": [
        "Oh no, take it easy!",
        "That sounds miserable, I'm sorry.",
        "Look after yourself, okay?",
    ],
    "life": ["That's brilliant, well done!", "No way! Amazing.", "I'm so proud of you."],
    "job": [
        "Big news! How do you feel?",
        "Congratulations, that's huge.",
        "Wow. That's a big step.",
    ],
    "move": [
        "Big change! How are you feeling about it?",
        "That's exciting, and terrifying.",
        "Need a hand with anything?",
    ],
    "family": ["Aw, that's lovely.", "Give them my love.", "Oh, that's so nice to hear."],
    "profile": ["Ha, fair enough.", "That's a long time.", "Sounds about right."],
    "car": ["RIP.", "Cars, eh.", "Very fancy."],
}


# -- the world and its planted facts --------------------
@dataclass
class Fact:
    """One evidence turn: who says it, what, and what it answers."""

    key: str
    category: str  # REACTIONS key
    owner: str  # user | friend
    text: str
    keys: list[str]  # answer strings that must not occur in any turn that is not evidence
    event: str | None = None  # a dated event of the user (temporal windows), short
    after: list[str] = field(default_factory=list)  # facts that must come in earlier sessions
    session: int = -1
    ref: str = ""
    day: date | None = None


@dataclass
class Question:
    type: str
    question: str
    evidence: list[str]  # fact keys
    answer: str
    stale: list[str] = field(default_factory=list)
    window: tuple[str, str] | None = None


class World:
    """A conversation's persona: names, facts and the questions asked about them."""

    def __init__(self, index: int, rng: random.Random, picks: dict[str, list[Any]]) -> None:
        self.index = index
        self.rng = rng
        self.user, self.upron = picks["users"][index]
        self.friend, self.fpron = picks["friends"][index]
        self.pp = "her" if self.upron == "she" else "his"  # the user's possessive
        self.partner = picks["partners"][index]
        rels = PARTNER_RELS if rng.random() < 0.6 else ["partner"]
        self.partner_rel = rng.choice(rels)
        self.partner_job = rng.choice(PARTNER_JOBS)
        self.sib_rel, self.sibling = picks["siblings"][index]
        self.proposal = rng.choice(PROPOSALS)
        self.parent = rng.choice(["mum", "dad"])
        self.town = picks["towns"][index]
        self.facts: list[Fact] = []
        self.questions: list[Question] = []
        self.other_cities: list[str] = []

    def add(self, fact: Fact) -> Fact:
        self.facts.append(fact)
        return fact

    def ask(self, qtype: str, question: str, evidence: Sequence[str], answer: str,
            stale: Sequence[str] = ()) -> None:  # fmt: skip
        self.questions.append(Question(qtype, question, list(evidence), answer, list(stale)))

    def who(self) -> str:
        """How a question names the user: by name, or as "I" (the user asking)."""
        return self.user


def build_world(index: int, rng: random.Random, picks: dict[str, list[Any]]) -> World:
    w = World(index, rng, picks)
    U, pp = w.user, w.pp
    F = w.friend
    fpp = "her" if w.fpron == "she" else "his"
    companies = rng.sample(COMPANIES, 3)
    roles = rng.sample(ROLES, 3)
    cities = rng.sample(CITIES, 4)
    city1, city2 = cities[0], cities[1]
    w.other_cities = cities[2:]
    cars = rng.sample(CARS, 2)
    pets = rng.sample(PETS, 3)
    pet_names = rng.sample(PET_NAMES, 3)
    hobbies = rng.sample(HOBBIES, 4)
    venues = rng.sample(VENUES, 4)
    trips = rng.sample(TRIPS, 4)
    purchases = rng.sample(PURCHASES, 3)
    sources = rng.sample(PURCHASE_SOURCES, 3)
    health = rng.sample(HEALTH, 2)
    life = rng.sample(LIFE_EVENTS, 3)
    band, time_, food_bank = rng.choice(BANDS), rng.choice(TIMES), rng.choice(FOOD_BANKS)

    # Profile: said early, in the first sessions.
    years = rng.randint(3, 8)
    w.add(
        Fact(
            "job1",
            "profile",
            "user",
            f"I've been {_a(roles[0])} at {companies[0]} for "
            f"{years} years now, same desk, same terrible coffee.",
            [roles[0]],
        )
    )
    w.add(
        Fact(
            "city1",
            "profile",
            "user",
            f"Rent in {city1} went up again, I've lived here "
            f"{rng.randint(4, 12)} years and it's never been this bad.",
            [city1],
        )
    )
    w.add(
        Fact(
            "partner",
            "family",
            "user",
            f"My {w.partner_rel} {w.partner} finally qualified "
            f"as {_a(w.partner_job)} today, we're going out to celebrate.",
            [w.partner_job],
        )
    )
    w.add(
        Fact(
            "parent",
            "family",
            "user",
            f"My {w.parent} still lives in {w.town}, I'm driving "
            f"up for {'her' if w.parent == 'mum' else 'his'} birthday next weekend.",
            [w.town],
        )
    )
    w.add(
        Fact(
            "sibling",
            "family",
            "user",
            f"My {w.sib_rel} {w.sibling} just got engaged! The proposal happened {w.proposal}.",
            [w.proposal],
        )
    )
    w.add(
        Fact(
            "car1",
            "car",
            "user",
            f"My old {cars[0]} failed its MOT again, the garage practically laughed at me.",
            [cars[0]],
        )
    )
    parent_word = "mother" if w.parent == "mum" else "father"
    w.ask("single_hop", f"What did {U} do at {companies[0]}?", ["job1"], roles[0])
    w.ask("single_hop", f"Where does {U}'s {w.parent} live?", ["parent"], w.town)
    w.ask("paraphrased", f"Which town is {U}'s {parent_word} based in?", ["parent"], w.town)
    w.ask(
        "single_hop",
        f"What does {U}'s {w.partner_rel} {w.partner} do for work?",
        ["partner"],
        w.partner_job,
    )
    w.ask("paraphrased", f"What line of work is {U}'s other half in?", ["partner"], w.partner_job)
    w.ask("single_hop", f"Where did {w.sibling} get engaged?", ["sibling"], w.proposal)
    w.ask("paraphrased", f"Where was {U}'s sibling asked to marry?", ["sibling"], w.proposal)

    # The job change: notice, then a new job in a later session (the old statement is stale).
    w.add(
        Fact(
            "job_notice",
            "job",
            "user",
            f"I handed in my notice at {companies[0]} today, my manager took it surprisingly well.",
            [],
            event=f"quit {companies[0]}",
            after=["job1"],
        )
    )
    w.add(
        Fact(
            "job_new",
            "job",
            "user",
            f"First week as {_a(roles[1])} at {companies[1]} done, everyone's been lovely so far.",
            [companies[1], roles[1]],
            event=f"started at {companies[1]}",
            after=["job_notice"],
        )
    )
    w.ask(
        "single_hop",
        f"Where does {U} work now?",
        ["job_new"],
        f"{companies[1]} ({roles[1]})",
        stale=["job1"],
    )
    w.ask(
        "paraphrased", f"Who is {U}'s current employer?", ["job_new"], companies[1], stale=["job1"]
    )
    w.ask("paraphrased", f"Which organisation did {U} resign from?", ["job_notice"], companies[0])
    w.ask("temporal", f"When did {U} hand in {pp} notice at {companies[0]}?", ["job_notice"], "")
    w.ask("temporal", f"When did {U} start working at {companies[1]}?", ["job_new"], "")
    w.ask(
        "multi_hop",
        f"What job did {U} take after leaving {companies[0]}?",
        ["job_notice", "job_new"],
        f"{roles[1]} at {companies[1]}",
    )
    w.ask("paraphrased", f"What was {U}'s profession before the career change?", ["job1"], roles[0])
    w.ask(
        "temporal",
        f"How long after handing in {pp} notice did {U} start the new job?",
        ["job_notice", "job_new"],
        "",
    )

    # The move: a lease in a new city, moving in a session or more later.
    w.add(
        Fact(
            "move_lease",
            "move",
            "user",
            f"We signed for a flat in {city2}! We move at the end of the month.",
            [city2],
            event=f"signed for a flat in {city2}",
            after=["city1"],
        )
    )
    w.add(
        Fact(
            "move_in",
            "move",
            "user",
            "Finally moved in, boxes everywhere and the new neighbours brought round a cake.",
            ["neighbours brought round a cake"],
            event="moved house",
            after=["move_lease"],
        )
    )
    w.ask("single_hop", f"Which city does {U} live in now?", ["move_lease"], city2, stale=["city1"])
    w.ask("paraphrased", f"Where is {U} based these days?", ["move_lease"], city2, stale=["city1"])
    w.ask("temporal", f"When did {U} actually move into the new place?", ["move_in"], "")
    w.ask(
        "temporal",
        f"How long after signing for the flat did {U} move in?",
        ["move_lease", "move_in"],
        "",
    )
    w.ask(
        "multi_hop",
        f"Which city did {U} leave, and where did {w.upron} move to?",
        ["city1", "move_lease"],
        f"{city1} to {city2}",
    )
    w.ask(
        "multi_hop",
        f"Did {U} move before or after starting at {companies[1]}?",
        ["move_in", "job_new"],
        "",
    )

    # The car: the old one stale once it is traded in.
    w.add(
        Fact(
            "car2",
            "car",
            "user",
            f"Traded the {cars[0]} in for {_a(cars[1])}, it's so quiet I keep checking it's on.",
            [cars[1]],
            event=f"got a {cars[1]}",
            after=["car1"],
        )
    )
    w.ask("single_hop", f"What car does {U} drive now?", ["car2"], cars[1], stale=["car1"])
    w.ask(
        "paraphrased", f"Which vehicle does {U} own these days?", ["car2"], cars[1], stale=["car1"]
    )
    w.ask("temporal", f"When did {U} get the {cars[1]}?", ["car2"], "")
    w.ask(
        "paraphrased", f"Which automobile did {U} have before the current one?", ["car1"], cars[0]
    )

    # The sibling's wedding (after the engagement).
    w.add(
        Fact(
            "wedding",
            "family",
            "user",
            f"{w.sibling}'s wedding was on Saturday, I cried through the whole ceremony.",
            ["cried through the whole ceremony"],
            event=f"went to {w.sibling}'s wedding",
            after=["sibling"],
        )
    )
    w.ask("temporal", f"When did {w.sibling} get married?", ["wedding"], "")
    w.ask(
        "single_hop",
        f"Who in {U}'s family just got engaged?",
        ["sibling"],
        f"{pp} {w.sib_rel} {w.sibling}",
    )
    w.ask(
        "multi_hop",
        f"Where did {U}'s {w.sib_rel} get engaged, and when was the wedding?",
        ["sibling", "wedding"],
        w.proposal,
    )

    # Pets: two adopted by the user; the friend gets one too (a distractor with its own question).
    ages = rng.sample(range(1, 10), 2)
    for n in range(2):
        pet, name, key = pets[n], pet_names[n], f"pet{n + 1}"
        it = rng.choice(["she", "he"])
        w.add(
            Fact(
                key,
                "pet",
                "user",
                f"We adopted {_a(pet.breed)} called {name} "
                f"{rng.choice(PET_SOURCES)} this weekend, {it}'s {ages[n]} years old.",
                [pet.breed],
                event=f"adopted {name}",
            )
        )
        w.ask("single_hop", f"What kind of animal is {name}?", [key], pet.breed)
        obj = "her" if it == "she" else "him"
        w.ask("single_hop", f"How old was {name} when {U} adopted {obj}?", [key], str(ages[n]))
        w.ask("paraphrased", f"What name did {U} give the {pet.para}?", [key], name)
        w.ask("temporal", f"When did {U} adopt {name}?", [key], "")
    older = pet_names[0] if ages[0] > ages[1] else pet_names[1]
    w.ask(
        "multi_hop",
        f"Which of {U}'s pets was older when adopted, {pet_names[0]} or {pet_names[1]}?",
        ["pet1", "pet2"],
        older,
    )
    w.ask(
        "multi_hop",
        f"Which animal joined {U}'s home first, {pet_names[1]} or {pet_names[0]}?",
        ["pet1", "pet2"],
        "",
    )
    w.ask(
        "multi_hop",
        f"Was {U} still working at {companies[0]} when {w.upron} adopted {pet_names[0]}?",
        ["pet1", "job_notice"],
        "",
    )
    fpet = pets[2]
    w.add(
        Fact(
            "friend_pet",
            "pet",
            "friend",
            f"We finally got {_a(fpet.breed)}! The kids named "
            f"{'her' if rng.random() < 0.5 else 'him'} {pet_names[2]}.",
            [fpet.breed],
        )
    )
    w.ask("single_hop", f"What kind of pet did {F} get?", ["friend_pet"], fpet.breed)
    w.ask(
        "paraphrased",
        f"What did {F}'s children call the {fpet.para}?",
        ["friend_pet"],
        pet_names[2],
    )

    # Hobbies: three for the user (one dropped later), one for the friend.
    for n in range(3):
        h, venue, key = hobbies[n], venues[n], f"hobby{n + 1}"
        opening = rng.choice([
            f"I signed up for {h.phrase} at {venue}, first session is Thursday.",
            f"Started {h.phrase} at {venue} this week, I'm hopeless but it's fun.",
        ])  # fmt: skip
        w.add(Fact(key, "hobby", "user", opening, [venue], event=f"started {h.short}"))
        w.ask("single_hop", f"Where does {U} go for {h.short}?", [key], venue)
        w.ask("paraphrased", f"Which pastime involving {h.para} did {U} pick up?", [key], h.phrase)
        w.ask("temporal", f"When did {U} start {h.short}?", [key], "")
    w.add(
        Fact(
            "hobby_quit",
            "hobby",
            "user",
            f"I've stopped going to {hobbies[0].short}, I just can't fit it in anymore.",
            ["can't fit it in anymore"],
            event=f"quit {hobbies[0].short}",
            after=["hobby1"],
        )
    )
    w.ask(
        "single_hop",
        f"Is {U} still doing {hobbies[0].short}?",
        ["hobby_quit"],
        "no, stopped",
        stale=["hobby1"],
    )
    w.ask(
        "paraphrased",
        f"Does {U} still attend {hobbies[0].para} sessions?",
        ["hobby_quit"],
        "no",
        stale=["hobby1"],
    )
    w.ask(
        "multi_hop",
        f"Where did {U} used to go for {hobbies[0].short} before giving it up?",
        ["hobby1", "hobby_quit"],
        venues[0],
    )
    w.ask(
        "temporal",
        f"How long did {U} keep going to {hobbies[0].short} before stopping?",
        ["hobby1", "hobby_quit"],
        "",
    )
    fh = hobbies[3]
    w.add(
        Fact(
            "friend_hobby",
            "hobby",
            "friend",
            f"I've joined {fh.phrase} at {venues[3]}, don't laugh.",
            [venues[3]],
        )
    )
    w.ask("single_hop", f"What did {F} join at {venues[3]}?", ["friend_hobby"], fh.phrase)
    w.ask(
        "paraphrased",
        f"Which hobby involving {fh.para} has {F} taken up?",
        ["friend_hobby"],
        fh.phrase,
    )

    # Trips: three for the user, one for the friend.
    companions_sib = f"my {w.sib_rel} {w.sibling}"
    companions = [companions_sib, w.partner, rng.choice(COMPANIONS_EXTRA)]
    rng.shuffle(companions)
    for n in range(3):
        t, comp, key = trips[n], companions[n], f"trip{n + 1}"
        activity = rng.choice(t.activities)
        w.add(
            Fact(
                key,
                "trip",
                "user",
                f"Just got back from {t.dest} with {comp}, we {activity}.",
                [activity],
                event=f"went to {t.dest}",
            )
        )
        w.ask("single_hop", f"What did {U} do in {t.dest}?", [key], activity)
        w.ask("paraphrased", f"What did {U} get up to {t.para}?", [key], activity)
        w.ask("temporal", f"When did {U} go to {t.dest}?", [key], "")
        if comp == companions_sib:
            w.ask(
                "multi_hop",
                f"Where did {U} travel with {pp} {w.sib_rel}?",
                [key, "sibling"],
                t.dest,
            )
        elif comp == w.partner:
            w.ask(
                "multi_hop",
                f"Where did {U} go on holiday with {pp} {w.partner_rel}?",
                [key, "partner"],
                t.dest,
            )
        w.ask("single_hop", f"Who went to {t.dest} with {U}?", [key], comp)
    w.ask(
        "multi_hop",
        f"Which trip came first, {trips[2].dest} or {trips[0].dest}?",
        ["trip1", "trip3"],
        "",
    )
    ft = trips[3]
    factivity = rng.choice(ft.activities)
    w.add(
        Fact(
            "friend_trip",
            "trip",
            "friend",
            f"We're back from {ft.dest}! We {factivity}.",
            [factivity],
        )
    )
    w.ask("single_hop", f"What did {F} do in {ft.dest}?", ["friend_trip"], factivity)
    w.ask(
        "paraphrased",
        f"Which place did {F} visit recently, and what happened there?",
        ["friend_trip"],
        f"{ft.dest}: {factivity}",
    )

    # Purchases.
    for n in range(3):
        p, source, key = purchases[n], sources[n], f"buy{n + 1}"
        w.add(
            Fact(
                key,
                "purchase",
                "user",
                f"I finally bought {p.item} {source}, it barely fit through the door.",
                [source],
                event=f"bought {p.item}",
            )
        )
        w.ask("single_hop", f"Where did {U} get the {p.key} from?", [key], source)
        w.ask("paraphrased", f"Which {p.para} did {U} splurge on?", [key], p.item)
        w.ask("temporal", f"When did {U} buy the {p.key}?", [key], "")

    # Health and life events.
    fmt = {"U": U, "pp": pp, "band": band, "time": time_, "food_bank": food_bank}
    for n, ill in enumerate(health):
        key = f"health{n + 1}"
        w.add(Fact(key, "health", "user", ill.evidence, [ill.key], event=ill.event))
        w.ask("single_hop", ill.direct_q.format(**fmt), [key], ill.direct_a)
        w.ask("paraphrased", ill.para_q.format(**fmt), [key], ill.para_a)
        w.ask("temporal", ill.when_q.format(**fmt), [key], "")
    for n, ev in enumerate(life):
        key = f"life{n + 1}"
        w.add(
            Fact(
                key,
                "life",
                "user",
                ev.evidence.format(**fmt),
                [ev.key.format(**fmt)],
                event=ev.event,
            )
        )
        w.ask("single_hop", ev.direct_q.format(**fmt), [key], ev.direct_a.format(**fmt))
        w.ask("paraphrased", ev.para_q.format(**fmt), [key], ev.para_a.format(**fmt))
        w.ask("temporal", ev.when_q.format(**fmt), [key], "")

    # The friend's new job.
    w.add(
        Fact(
            "friend_job",
            "job",
            "friend",
            f"I start at {companies[2]} next week as {_a(roles[2])}, wish me luck.",
            [companies[2]],
        )
    )
    w.ask("single_hop", f"Where is {F} starting {fpp} new job?", ["friend_job"], companies[2])
    w.ask(
        "paraphrased",
        f"Which firm hired {F}, and in what role?",
        ["friend_job"],
        f"{companies[2]}, {roles[2]}",
    )
    return w


# -- sessions --------------------
PROFILE_SESSIONS = {"job1": 0, "city1": 0, "partner": 1, "car1": 1, "sibling": 2, "parent": 2}


def schedule(w: World, sessions: int) -> None:
    """Give every fact a session: profile first, events spread over the rest, `after` kept."""
    rng = w.rng
    for fact in w.facts:
        if fact.key in PROFILE_SESSIONS:
            fact.session = PROFILE_SESSIONS[fact.key]
    events = [f for f in w.facts if f.key not in PROFILE_SESSIONS]
    by_key = {f.key: f for f in w.facts}
    slots = sorted(s for s in range(3, sessions) for _ in range(2))
    for _attempt in range(10_000):
        rng.shuffle(events)
        chosen = sorted(rng.sample(slots, len(events)))
        for fact, slot in zip(events, chosen, strict=True):
            fact.session = slot
        if all(by_key[a].session < f.session for f in events for a in f.after):
            return
    raise RuntimeError("could not schedule the facts")


def _a(phrase: str) -> str:
    """The phrase with its indefinite article ("an architect", "an HR advisor", "a UX …")."""
    vowel = phrase[:1].lower() in "aeio" or phrase.startswith(("HR", "MX"))
    return ("an " if vowel else "a ") + phrase


def _fields(template: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(template) if name]


@dataclass
class Line:
    role: str  # user | assistant
    text: str
    fact: str | None = None


def render_sessions(w: World, sessions: int) -> list[list[Line]]:
    """The turns of every session: opener, planted facts with reactions, filler, closer."""
    rng = w.rng
    speaker = {"user": w.user, "assistant": w.friend}
    used: Counter[str] = Counter()
    out: list[list[Line]] = []
    by_session: dict[int, list[Fact]] = {}
    for fact in w.facts:
        by_session.setdefault(fact.session, []).append(fact)
    done: set[str] = set()
    for s in range(sessions):
        target = rng.randint(13, 17)
        state = _state(w, done, s)
        lines: list[Line] = []
        first = rng.choice(["user", "assistant"])
        opener = rng.choice(OPENERS)
        _append(lines, first, opener, speaker, state)
        planted = list(by_session.get(s, []))
        rng.shuffle(planted)
        # Planted facts go anywhere between opener and closer, among the filler.
        slots = sorted(rng.sample(range(1, max(2, target // 3) + 1), len(planted)))
        block = 0
        while len(lines) < target - 2 or planted:
            block += 1
            if planted and (block >= slots[0] or len(lines) >= target - 4):
                slots.pop(0)
                fact = planted.pop(0)
                role = "user" if fact.owner == "user" else "assistant"
                if lines[-1].role == role:
                    lines.append(Line(_other(role), rng.choice(BRIDGES)))
                lines.append(Line(role, fact.text, fact.key))
                said = {line.text for line in lines}
                fresh = [r for r in REACTIONS[fact.category] if r not in said]
                lines.append(Line(_other(role), rng.choice(fresh or REACTIONS[fact.category])))
                done.add(fact.key)
                state = _state(w, done, s)
                continue
            lines.extend(_filler(rng, _other(lines[-1].role), speaker, state, used))
        closer = rng.choice(CLOSERS)
        _append(lines, _other(lines[-1].role), closer, speaker, state)
        out.append(lines)
    return out


def _other(role: str) -> str:
    return "assistant" if role == "user" else "user"


def _append(lines: list[Line], first: str, pair: Sequence[str], speaker: dict[str, str],
            state: dict[str, str]) -> None:  # fmt: skip
    role = first
    for text in pair:
        values = {**state, "me": speaker[role], "you": speaker[_other(role)]}
        lines.append(Line(role, text.format(**values)))
        role = _other(role)


def _filler(rng: random.Random, first: str, speaker: dict[str, str], state: dict[str, str],
            used: Counter[str]) -> list[Line]:  # fmt: skip
    """One small-talk block started by `first`, its placeholders available, least used first."""
    who = "user" if first == "user" else "friend"
    options = [
        (lines_, i)
        for i, (starter, lines_) in enumerate(FILLER)
        if starter in ("any", who)
        and all(name in state or name in ("me", "you") for t in lines_ for name in _fields(t))
    ]
    fewest = min(used[str(i)] for _, i in options)
    pool = [(lines_, i) for lines_, i in options if used[str(i)] <= fewest + 1]
    lines_, i = rng.choice(pool)
    used[str(i)] += 1
    values = dict(state)
    values["food"] = rng.choice(FOODS)
    values["show"] = rng.choice(SHOWS)
    values["day"] = rng.choice(DAYS)
    out: list[Line] = []
    role = first
    for text in lines_:
        values.update(me=speaker[role], you=speaker[_other(role)])
        out.append(Line(role, text.format(**values)))
        role = _other(role)
    return out


def _state(w: World, done: set[str], session: int) -> dict[str, str]:
    """What small talk may mention at this point of the story."""
    rng = w.rng
    state = {
        "U": w.user, "F": w.friend, "P": w.partner, "S": w.sibling, "town": w.town,
        "other_city": rng.choice(w.other_cities), "food": "", "show": "", "day": "",
    }  # fmt: skip
    by_key = {f.key: f for f in w.facts}
    pets = [k for k in ("pet1", "pet2") if k in done]
    if pets:
        text = by_key[rng.choice(pets)].text
        state["pet"] = text.split(" called ")[1].split(" ")[0]
    hobbies = [k for k in ("hobby1", "hobby2", "hobby3") if k in done]
    if "hobby_quit" in done and "hobby1" in hobbies:
        hobbies.remove("hobby1")
    if hobbies:
        short = _hobby_short(by_key[rng.choice(hobbies)].text)
        state["hobby"], state["Hobby"] = short, short[:1].upper() + short[1:]
    # Conditions as empty placeholders: a line starting "{after_move}" needs the move done.
    for flag, key in (("move", "move_in"), ("job", "job_new")):
        state[f"after_{flag}" if key in done else f"before_{flag}"] = ""
    bought = [k for k in ("buy1", "buy2", "buy3") if k in done]
    if bought:
        state["item"] = _purchase_key(by_key[rng.choice(bought)].text)
    ahead = [
        by_key[k] for k in ("trip1", "trip2", "trip3")
        if k not in done and 0 < by_key[k].session - session <= 3
    ]  # fmt: skip
    if ahead:
        state["dest"] = ahead[0].text.split(" from ")[1].split(" with ")[0]
    return state


def _hobby_short(text: str) -> str:
    for h in HOBBIES:
        if h.phrase in text:
            return h.short
    raise ValueError(text)


def _purchase_key(text: str) -> str:
    for p in PURCHASES:
        if p.item in text:
            return p.key
    raise ValueError(text)


# -- whole dataset --------------------
SEASONS = {"spring": (3, 5), "summer": (6, 8), "autumn": (9, 11), "winter": (12, 2)}
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]  # fmt: skip


def build(count: int = CONVERSATIONS, seed: int = SEED) -> tuple[list[dict], list[dict]]:
    """The conversations and questions as JSON rows (deterministic for a seed)."""
    rng = random.Random(seed)
    picks: dict[str, list[Any]] = {
        "users": rng.sample(USERS, len(USERS)),
        "friends": rng.sample(FRIENDS, len(FRIENDS)),
        "partners": rng.sample(PARTNER_NAMES, len(PARTNER_NAMES)),
        "siblings": rng.sample(SIBLINGS, len(SIBLINGS)),
        "towns": rng.sample(PARENT_TOWNS, len(PARENT_TOWNS)),
    }
    if count > min(len(v) for v in picks.values()):
        raise SystemExit(f"at most {min(len(v) for v in picks.values())} conversations")
    conversations, questions = [], []
    for index in range(count):
        conv, qs = build_conversation(index, random.Random(seed * 1000 + index), picks)
        conversations.append(conv)
        questions.extend(qs)
    return conversations, questions


def build_conversation(
    index: int, rng: random.Random, picks: dict[str, list[Any]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    cid = f"c{index + 1:02d}"
    w = build_world(index, rng, picks)
    n_sessions = rng.randint(24, 28)
    schedule(w, n_sessions)
    rendered = render_sessions(w, n_sessions)
    day = date(2025, 3, 3) + timedelta(days=rng.randint(0, 35))
    by_key = {f.key: f for f in w.facts}
    sessions = []
    last_ts = 0.0
    for s, lines in enumerate(rendered):
        if s:
            day += timedelta(days=rng.randint(6, 19))
        start = datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()
        ts = max(start + rng.randint(8 * 3600, 21 * 3600), last_ts + 60)
        turns = []
        for t, line in enumerate(lines, start=1):
            ts += rng.randint(15, 150)
            ref = f"{cid}/s{s + 1}/t{t}"
            speaker = w.user if line.role == "user" else w.friend
            turns.append(
                {"ref": ref, "role": line.role, "speaker": speaker, "text": line.text, "ts": ts}
            )
            if line.fact:
                by_key[line.fact].ref = ref
                by_key[line.fact].day = day
        last_ts = ts
        sessions.append({"id": f"s{s + 1}", "date": day.isoformat(), "turns": turns})
    now = day + timedelta(days=1)
    now_ts = datetime(now.year, now.month, now.day, 12, tzinfo=UTC).timestamp()
    temporal_windows(w, now)
    conv = {
        "id": cid,
        "speakers": {"user": w.user, "assistant": w.friend},
        "now": now.isoformat(),
        "now_ts": now_ts,
        "sessions": sessions,
    }
    rows = []
    for n, q in enumerate(w.questions, start=1):
        text = q.question
        if w.rng.random() < FIRST_PERSON:
            text = first_person(text, w) or text
        evidence = [by_key[k] for k in q.evidence]
        answer = q.answer
        if q.type == "temporal" and not answer:
            answer = ", ".join(f.day.isoformat() for f in evidence if f.day)
        elif not answer:  # ordering questions: the evidence in time order
            answer = " before ".join(f.event or f.key for f in sorted(evidence, key=_when))
        row: dict[str, Any] = {
            "id": f"{cid}-q{n:03d}",
            "conversation": cid,
            "type": q.type,
            "question": text,
            "evidence": [f.ref for f in evidence],
            "stale": [by_key[k].ref for k in q.stale],
            "answer": answer,
            "asked_at": now_ts,
        }
        if q.window:
            row["window"] = list(q.window)
        rows.append(row)
    check_conversation(conv, rows, w)
    return conv, rows


FIRST_PERSON = 0.35  # the share of questions about the user asked by the user ("When did I…")


def first_person(text: str, w: World) -> str | None:
    """The question as the user would ask it, or None when the rewrite would be ambiguous
    (a pronoun left that could be the user's or someone else's)."""
    U = re.escape(w.user)
    if not re.search(rf"\b{U}\b", text) or w.friend in text:
        return None
    rules = [
        (rf"\b{U}'s\b", "my"),  # first: "is Liam's other half" is "is my other half"
        (rf"\b([Dd])oes {U}\b", r"\1o I"),
        (rf"\bIs {U}\b", "Am I"),
        (rf"\bis {U}\b", "am I"),
        (rf"\bhas {U}\b", "have I"),
        (rf"\b(gives|with|to|for|about) {U}\b", r"\1 me"),
        (rf"\b{U}\b", "I"),
    ]
    for pattern, replacement in rules:
        text = re.sub(pattern, replacement, text)
    if re.search(r"\b(she|he|her|his|him)\b", text, re.I):
        return None
    return text


def _when(f: Fact) -> tuple[int, str]:
    return (f.session, f.ref)


def temporal_windows(w: World, now: date) -> None:
    """Questions about a span of time: a named month, last month, a season relative to now.
    Evidence: the user's planted events in that span (1-3 of them, else no question)."""
    rng = w.rng
    events = [f for f in w.facts if f.owner == "user" and f.event and f.day]
    U = w.user

    def within(start: date, end: date, category: str | None = None) -> list[Fact]:
        return [
            f for f in events if start <= f.day <= end  # type: ignore[operator]
            and (category is None or f.category == category)
        ]  # fmt: skip

    def ask(text: str, start: date, end: date, found: list[Fact]) -> None:
        answer = "; ".join(f"{f.event} ({f.day})" for f in sorted(found, key=_when))
        w.questions.append(Question("temporal", text, [f.key for f in found], answer,
                                    window=(start.isoformat(), end.isoformat())))  # fmt: skip

    # Named months (those with 1-3 events), up to four.
    months = sorted({(f.day.year, f.day.month) for f in events})  # type: ignore[union-attr]
    rng.shuffle(months)
    asked = 0
    for year, month in months:
        start, end = _month(year, month)
        found = within(start, end)
        if 1 <= len(found) <= 3 and asked < 4:
            phrasing = rng.choice([
                f"What happened in {U}'s life in {MONTHS[month - 1]} {year}?",
                f"What did {U} get up to in {MONTHS[month - 1]} {year}?",
                f"What was new with {U} in {MONTHS[month - 1]} {year}?",
            ])  # fmt: skip
            ask(phrasing, start, end, found)
            asked += 1
    # Last month and two months ago (calendar months before now).
    for back, phrase in ((1, "last month"), (2, "two months ago"), (3, "three months ago")):
        year, month = now.year, now.month - back
        while month < 1:
            year, month = year - 1, month + 12
        start, end = _month(year, month)
        found = within(start, end)
        if 1 <= len(found) <= 3:
            ask(f"What did {U} do {phrase}?", start, end, found)
    # Seasons, scoped by kind ("where did I travel last summer").
    scoped = [
        ("trip", "Where did {U} travel last {season}?"),
        ("purchase", "What did {U} buy last {season}?"),
        ("hobby", "What did {U} start doing last {season}?"),
        ("health", "What health trouble did {U} have last {season}?"),
        ("pet", "Which animal did {U} adopt last {season}?"),
    ]
    for season in SEASONS:
        start, end = _last_season(season, now)
        for category, template in scoped:
            found = within(start, end, category)
            if category == "hobby":
                found = [f for f in found if f.key != "hobby_quit"]
            if 1 <= len(found) <= 3:
                ask(template.format(U=U, season=season), start, end, found)
        found = within(start, end)
        if 1 <= len(found) <= 3:
            ask(f"What did {U} do last {season}?", start, end, found)


def _month(year: int, month: int) -> tuple[date, date]:
    start = date(year, month, 1)
    nxt = date(year + (month == 12), month % 12 + 1, 1)
    return start, nxt - timedelta(days=1)


def _last_season(season: str, now: date) -> tuple[date, date]:
    """The most recent complete season before now (winter spans the new year)."""
    first, last = SEASONS[season]
    for year in range(now.year, now.year - 3, -1):
        start = date(year - (1 if first > last else 0), first, 1)
        end = _month(year, last)[1]
        if end < now:
            return start, end
    raise AssertionError(season)


# -- the rules --------------------
class DatasetError(AssertionError):
    pass


def check_conversation(conv: dict[str, Any], rows: list[dict[str, Any]], w: World) -> None:
    """Refuse a conversation that breaks the dataset's rules (see the module docstring)."""
    turns = {t["ref"]: t for s in conv["sessions"] for t in s["turns"]}
    where = conv["id"]
    if len(conv["sessions"]) < 20 or len(turns) < 300 or len(rows) < 100:
        raise DatasetError(f"{where}: {len(conv['sessions'])} sessions, {len(turns)} turns, "
                           f"{len(rows)} questions")  # fmt: skip
    last = 0.0
    for turn in turns.values():
        if turn["ts"] <= last:
            raise DatasetError(f"{turn['ref']}: timestamps must increase")
        last = turn["ts"]
    evidence_refs = {f.ref for f in w.facts}
    for fact in w.facts:
        if fact.ref not in turns:
            raise DatasetError(f"{where}: fact {fact.key} was not placed")
        # An answer said anywhere else would be unlisted evidence.
        for key in fact.keys:
            pattern = re.compile(r"\b" + re.escape(key.lower()) + r"\b")
            for ref, turn in turns.items():
                if ref != fact.ref and pattern.search(turn["text"].lower()):
                    if ref in evidence_refs:
                        continue  # planted texts mention each other's words by design
                    raise DatasetError(f"{ref} leaks {fact.key}'s answer {key!r}: "
                                       f"{turn['text']!r}")  # fmt: skip
    for row in rows:
        if not row["evidence"] or not all(r in turns for r in row["evidence"] + row["stale"]):
            raise DatasetError(f"{row['id']}: evidence {row['evidence']} / {row['stale']}")
        if row["type"] not in TYPES or not row["answer"]:
            raise DatasetError(f"{row['id']}: type {row['type']!r}, answer {row['answer']!r}")
        if row["type"] == "multi_hop" and len(set(row["evidence"])) < 2:
            raise DatasetError(f"{row['id']}: multi_hop needs two evidence turns")
        for stale in row["stale"]:
            if turns[stale]["ts"] >= min(turns[r]["ts"] for r in row["evidence"]):
                raise DatasetError(f"{row['id']}: a stale turn must be older than the evidence")
        if row["type"] == "paraphrased":
            for ref in row["evidence"]:
                shared = shared_words(row["question"], turns[ref]["text"])
                if shared:
                    raise DatasetError(f"{row['id']} shares {shared} with {ref}: "
                                       f"{row['question']!r} / {turns[ref]['text']!r}")  # fmt: skip


def no_shared_word(row: dict[str, Any], turns: dict[str, dict[str, Any]]) -> bool:
    return not any(shared_words(row["question"], turns[r]["text"]) for r in row["evidence"])


def check(conversations: list[dict[str, Any]], questions: list[dict[str, Any]]) -> dict[str, Any]:
    """Whole-dataset rules; returns the shape (counts) for the README and the tests."""
    turns = {t["ref"]: t for c in conversations for s in c["sessions"] for t in s["turns"]}
    types = Counter(q["type"] for q in questions)
    if set(types) != set(TYPES):
        raise DatasetError(f"types {dict(types)}")
    if len({q["id"] for q in questions}) != len(questions):
        raise DatasetError("question ids must be unique")
    lexical_free = sum(no_shared_word(q, turns) for q in questions)
    share = lexical_free / len(questions)
    if share < 1 / 3:
        raise DatasetError(f"only {share:.1%} of questions share no content word")
    return {
        "conversations": len(conversations),
        "sessions": sum(len(c["sessions"]) for c in conversations),
        "turns": len(turns),
        "questions": len(questions),
        "types": {t: types[t] for t in TYPES},
        "no_shared_word": lexical_free,
        "no_shared_word_share": round(share, 3),
        "with_stale": sum(bool(q["stale"]) for q in questions),
    }


def dump(rows: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def files(count: int = CONVERSATIONS, seed: int = SEED) -> dict[str, str]:
    conversations, questions = build(count, seed)
    shape = check(conversations, questions)
    return {
        "conversations.jsonl": dump(conversations),
        "questions.jsonl": dump(questions),
        "README.md": readme(shape, conversations, questions, seed),
    }


def readme(
    shape: dict[str, Any],
    conversations: list[dict[str, Any]],
    questions: list[dict[str, Any]],
    seed: int,
) -> str:
    first_q = next(q for q in questions if q["type"] == "paraphrased")
    example_conv = conversations[0]
    session = example_conv["sessions"][0]
    turn = session["turns"][0]
    per_conv = Counter(q["conversation"] for q in questions)
    turns_per = [sum(len(s["turns"]) for s in c["sessions"]) for c in conversations]
    sessions_per = [len(c["sessions"]) for c in conversations]
    types = shape["types"]
    planted = len({r for q in questions for r in q["evidence"] + q["stale"]})
    return README.format(
        seed=seed,
        conversations=shape["conversations"],
        sessions=shape["sessions"],
        smin=min(sessions_per),
        smax=max(sessions_per),
        turns=shape["turns"],
        tmin=min(turns_per),
        tmax=max(turns_per),
        questions=shape["questions"],
        qmin=min(per_conv.values()),
        qmax=max(per_conv.values()),
        single=types["single_hop"],
        multi=types["multi_hop"],
        temporal=types["temporal"],
        para=types["paraphrased"],
        free=shape["no_shared_word"],
        share=f"{shape['no_shared_word_share']:.1%}",
        stale=shape["with_stale"],
        planted=planted,
        ratio=round(shape["turns"] / planted),
        pairs=", ".join(
            f"{c['speakers']['user']} and {c['speakers']['assistant']}" for c in conversations[:4]
        ),  # fmt: skip
        conv_example=json.dumps(
            {
                "id": example_conv["id"],
                "speakers": example_conv["speakers"],
                "now": example_conv["now"],
                "now_ts": example_conv["now_ts"],
                "sessions": [
                    {"id": session["id"], "date": session["date"], "turns": [turn, "..."]},
                    "...",
                ],
            },
            ensure_ascii=False,
        ),
        q_example=json.dumps(first_q, ensure_ascii=False),
    )


README = """# Long-conversation retrieval dataset

Generated by `scripts/make_conversation_eval.py` (seed {seed}; deterministic) and
measured by `scripts/eval_conversations.py` (results: `docs/retrieval-eval.md`). Do not edit
these files: change the generator and rerun it; `--check` exits 1 when they are stale, and
`tests/scripts/test_conversation_eval.py` checks the rules below. This README is generated too.

```sh
.venv/bin/python scripts/make_conversation_eval.py            # rewrite this directory
.venv/bin/python scripts/make_conversation_eval.py --check    # fail if stale
.venv/bin/python scripts/make_conversation_eval.py --out /tmp/c --seed 7 --conversations 12
```

## Shape

{conversations} conversations, each between two named people (for example {pairs}), over about
a year: {sessions} dated sessions ({smin}–{smax} per conversation, days to weeks apart, from
March–April 2025 to early 2026), {turns} turns ({tmin}–{tmax} per conversation), {questions}
questions ({qmin}–{qmax} per conversation). The examples on this page come from the default
seed's first conversation.

- `single_hop` ({single}): one fact from one turn ("What kind of animal is Clover?", "Where
  does Liam work now?");
- `multi_hop` ({multi}): two turns, maybe sessions apart ("Where did Liam travel with his
  brother?": the trip names Joel, another turn says Joel is his brother; "Which of my pets was
  older when adopted?");
- `temporal` ({temporal}): when something happened ("When did I adopt Pepper?": the answer is
  the session's date) or what happened in a period ("What did I get up to in June 2025?", "What
  did I do two months ago?", "Where did I travel last summer?", relative to the conversation's
  `now`);
- `paraphrased` ({para}): a fact asked in other words ("What name did Liam give the muscular
  terrier?" for "We adopted a staffie called Clover …").

{free} questions ({share}) share no content word with any of their evidence turns (the
generator fails below a third). {stale} questions have `stale` turns.

## How it is generated

Each conversation draws its own world from pools: the user and the friend, a partner and their
job, a sibling who gets engaged and married, a parent in another town, a job that changes (notice,
then a new employer), a move to another city, a car traded in, two adopted pets (and one of the
friend's), three hobbies (one given up later) and one of the friend's, three trips (and one of
the friend's), three purchases, two health events, three life events (a half marathon, a
concert, volunteering, …). Each is one planted *evidence turn* in the speaker's own words ("We
adopted a staffie called Clover from the rescue centre this weekend, she's 3 years old.");
profile facts come in the first three sessions, events are spread over the rest, in an order
that keeps causes first (notice before the new job, engagement before the wedding).

Around them is small talk — openers, weather, food, work gossip, plans, reactions, questions
back, closers — that reuses the facts' vocabulary without their answers: "My neighbour's dog
barks at every delivery van", "My gym changed the class timetable again", "How's Clover settling
in?", "Counting down the days to Lisbon.", a cousin who "just moved to Glasgow". The friend's own
pet, hobby, trip and job are distractors for the user's questions (and have questions of their
own). {planted} of the {turns} turns are planted evidence (one in {ratio}).

A fact that changes keeps both statements: the newest is the evidence and the older one is
listed as `stale` ("Which city does Liam live in now?": the lease in Leeds, not the rent
complaint about Swansea). About a third of the questions about the user are asked in the first
person ("When did I adopt Pepper?") — the user asking about their own history; the others name
them.

Rules the generator enforces (it refuses to write a dataset that breaks one):

- every evidence and stale ref exists, every question has evidence and an answer, a `multi_hop`
  question has at least two evidence turns, a stale turn is older than the evidence;
- no answer leaks: an evidence turn's key answer (the breed, the venue, the new employer, …)
  occurs in no turn that is not itself planted evidence;
- a `paraphrased` question shares no content word with its evidence turns, and at least a third
  of all questions share none. Content words: lowercase, stopwords (lobug's FTS list) dropped,
  plurals stripped; two words count as shared when equal, when one is a prefix of the other (4+
  letters — what lobug's BM25 prefix query matches, and -ed/-ing forms) or when they share a
  long stem ("proposal"/"proposed");
- ≥ 20 sessions, ≥ 300 turns and ≥ 100 questions per conversation; timestamps increase.

## `conversations.jsonl`

One conversation per line:

```json
{conv_example}
```

- `speakers.user` is stored with role `user` in Lo-Bug's turns, `speakers.assistant` (the friend,
  a person too) with role `assistant`; turn text has no name prefix.
- `ref` — `c<NN>/s<session>/t<turn>`, 1-based, both speakers counted; `ts` — epoch seconds (UTC),
  increasing; `date` — the session's day.
- `now` / `now_ts` — the day after the last session, noon UTC: when the questions are asked.

## `questions.jsonl`

One question per line:

```json
{q_example}
```

- `evidence` — the turn refs that answer it (all of them needed for `recall_all`); `stale` —
  older statements of a changed fact (not evidence); `answer` — a short reference answer (for
  `temporal` questions the evidence's session dates); `asked_at` — the conversation's `now_ts`;
  `window` (temporal period questions only) — the period, inclusive ISO dates.
- Temporal period questions count as evidence the user's planted events in that period (1–3,
  otherwise no question is asked); small talk in the period is not evidence.
"""


def write(out: Path, count: int = CONVERSATIONS, seed: int = SEED) -> dict[str, str]:
    out.mkdir(parents=True, exist_ok=True)
    contents = files(count, seed)
    for name, text in contents.items():
        (out / name).write_text(text, encoding="utf-8")
    return contents


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"default {OUT.relative_to(ROOT)}")
    parser.add_argument("--conversations", type=int, default=CONVERSATIONS)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--check", action="store_true", help="fail if the files differ")
    args = parser.parse_args(argv)
    contents = files(args.conversations, args.seed)
    if args.check:
        stale = [
            n for n, text in contents.items()
            if not (args.out / n).exists() or (args.out / n).read_text(encoding="utf-8") != text
        ]  # fmt: skip
        if stale:
            print(f"stale: {', '.join(stale)} in {args.out} (run {Path(__file__).name})",
                  file=sys.stderr)  # fmt: skip
            return 1
        print(f"{args.out}: up to date")
        return 0
    write(args.out, args.conversations, args.seed)
    conversations = [json.loads(x) for x in contents["conversations.jsonl"].splitlines()]
    questions = [json.loads(x) for x in contents["questions.jsonl"].splitlines()]
    print(json.dumps(check(conversations, questions)))
    size = sum(len(t.encode()) for t in contents.values())
    print(f"wrote {args.out} ({size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
