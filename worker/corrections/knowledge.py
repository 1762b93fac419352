"""Curated world knowledge for the correction detector: which words and phrases of everyday
preference, habit, diet, schedule and work notes mean the same, and which are rival values.

Pure data, offline, small on purpose. Each entry is a general fact about English usage ("gets
up" = "wakes up", "doesn't eat meat" = vegetarian, mild / hot are rival spice levels), never a
particular note. `correction_lexicon` and `correction_patterns` merge these into the lookups
the detector uses.
"""

from __future__ import annotations

# Rival values of one attribute (antonyms and scales) beyond the lexicon's core classes. Two
# different members in the same slot compete: "mild salsa" -> "hot salsa".
VALUE_CLASSES = {
    "spiciness": "mild medium hot",
    "warmth": "hot cold warm cool chilly iced",
    "position": "start beginning end top bottom",
    "shift": "day night evening morning",
    "employment": "retired employed unemployed self-employed freelance freelancer student",
    "cabin": "economy business premium first",
    "transport": "foot",  # "walks to work" = "commutes by foot", a rival of "by car"
    "sweetness": "sweet unsweetened",
    "doneness": "rare medium well-done",
    "loudness": "loud quiet silent",
    "speed": "fast slow",
    "caffeine": "decaf caffeinated regular",
    "license": "open-source proprietary",
    "amount": "more less fewer",
    "size": "larger smaller bigger",
    "side": "left right",
    # A decision about one proposal: "Legal approved the template" -> "Legal vetoed it".
    "decision": "approved vetoed rejected denied declined accepted",
    "personality": "introvert extrovert ambivert",
    "platform": "pc playstation xbox nintendo",
    "channel": "push",
    "nationality": "british american canadian australian irish scottish welsh",
    "layout": "bullets prose table",
    "moisture": "dry wet",
    "device": "kindle ipad tablet laptop desktop",
    "stairs": "stairs elevator escalator",
    "book_format": "hardcover paperback ebook audiobook",
    "energy_unit": "kilowatt-hour megajoule joule kilojoule calorie kilocalorie btu",
    "data_unit": "byte kilobyte megabyte gigabyte terabyte kibibyte mebibyte gibibyte "
                 "tebibyte",
}

# Classes whose members describe one attribute of a thing, so a verb that takes many objects
# ("drinks tea", "drinks coffee") still holds only one of them ("drinks decaf" / "regular").
ATTRIBUTE_CLASSES = ("caffeine", "spiciness", "doneness", "sweetness", "warmth", "loudness",
                     "speed", "diet", "temperature", "length", "formality", "theme", "size",
                     "side", "amount")

# Category nouns and the members they cover: a note naming a member ("plays the cello") implies
# one naming the category ("plays an instrument"), so the later, specific note loses nothing of
# the earlier. Keys are category nouns (several spellings of one category in one key); values
# name value classes of the lexicon, and words after "+" are further members that are no rival
# values of each other (a conure and a dog can live side by side). Categories nest: a member
# that is itself a category brings its own members ("pet" covers "bird" covers "conure"). The
# broader world knowledge (places, cuisines, teams, professions...) is in `correction_categories`.
HYPERNYMS = {
    "sport": "sport",
    "instrument": "instrument",
    "language": "language",
    "medication medicine drug pill painkiller": "medicine",
    "car vehicle": "carmake",
    "bank": "bank",
    "airline": "airline",
    "browser": "browser",
    "editor": "editor",
    "city": "city",
    "country": "country",
    "beverage drink": "beverage alcohol coffee_drink",
    "alcohol": "alcohol",
    "laptop computer": "computer",
    "bird": "+parrot budgie parakeet cockatiel canary conure finch lovebird macaw cockatoo",
    "pet animal": "+dog cat rabbit hamster ferret goldfish turtle tortoise snake lizard gecko "
                  "chinchilla bird horse guinea-pig",
    "dog": "+labrador poodle beagle terrier spaniel retriever collie dachshund corgi husky "
           "bulldog pug greyhound whippet",
    "cat": "+siamese persian tabby ragdoll sphynx bengal",
    "food": "+peanut shellfish nut gluten dairy egg soy wheat sesame shrimp lactose",
    "nut": "+peanut almond cashew walnut hazelnut pecan pistachio",
    "certification certificate": "cloud +pmp cissp ccna comptia cfa cpa scrum prince2 itil",
    "genre music": "+rock jazz pop classical blues metal folk hip-hop rap techno house punk "
                   "reggae soul funk indie opera",
    "weekend": "+saturday sunday",
    "weekday": "+monday tuesday wednesday thursday friday",
    "kid": "+son daughter",
    "parent": "+mother father",
    "sibling": "+brother sister",
    "grandparent": "+grandmother grandfather",
    "spouse partner": "+wife husband",
}

# One-word synonyms (the lexicon folds them before comparing).
SYNONYMS = {
    "reminder": "remind", "reminders": "remind", "shown": "show",
    "cycle": "bike", "cycles": "bike", "cycling": "bike", "bicycle": "bike",
    "begin": "start", "begins": "start", "beginning": "start", "finish": "end",
    "finishes": "end", "spicy": "hot", "chilly": "cold", "cuisine": "food", "pic": "photo",
    "pics": "photo", "picture": "photo", "pictures": "photo", "movie": "film",
    "movies": "film", "flick": "film",
    "tv": "television", "telly": "television", "vacation": "holiday",
    "vacations": "holiday", "couch": "sofa", "physician": "doctor", "gp": "doctor",
    "automobile": "car", "fridge": "refrigerator",
    "jogging": "run", "jog": "run", "jogs": "run", "introverted": "introvert",
    "extroverted": "extrovert", "mins": "minute", "min": "minute", "hrs": "hour", "hr": "hour",
    "kilos": "kilogram", "kilo": "kilogram", "mon": "monday", "tue": "tuesday",
    "tues": "tuesday", "wed": "wednesday", "thu": "thursday", "thur": "thursday",
    "thurs": "thursday", "fri": "friday", "jan": "january", "feb": "february",
    "mar": "march", "apr": "april", "jun": "june", "jul": "july", "aug": "august",
    "sep": "september", "sept": "september", "oct": "october", "nov": "november",
    "dec": "december", "hardback": "hardcover", "paperbacks": "paperback",
}

# Verb pairs that state one fact about the same object: "owns a Tesla" = "drives a Tesla",
# "runs a bakery" = "owns a bakery", "runs Linux" = "uses Linux". Consulted only when the verb
# is all that differs between the notes. Each group is a set of mutually equivalent verbs.
VERB_EQUIVALENTS = (
    "own have possess",
    "own drive",
    "own run",
    "use run",
    "have keep",
    "attend go",
    "eat have",
    "drink have",
    "take have",
    "take drink",
    "track count log monitor record",
    "shop buy",
    "learn prepare",
    "host throw",
    "have hold",  # "holds a doctorate" = "has a PhD"
    "arrive land",
    "buy order",
)

# A particle after a verb makes another verb ("works" / "works out", "gives" / "gives up"),
# except in these pairs where it is optional.
OPTIONAL_PARTICLES = ("wake up", "sit down", "stand up", "lie down", "eat up", "drink up",
                      "finish up", "end up", "start out")

_PLACES = r"work|the office|school|class|college|university|uni|the gym"

# Phrase equivalences, applied to the lower-cased note after correction markers were taken out
# (`correction_patterns.rewrite`). Each maps several ways to say one thing onto one form.
EQUIVALENCES: tuple[tuple[str, str], ...] = (
    # Diet: a stated diet and the habit that defines it.
    (r"\b(?:not|never) eats? (?:any )?(?:meat or fish|animal products|dairy or meat)\b",
     " vegan "),
    (r"\b(?:not|never) eats? (?:any |red )?meat\b|\beats? no meat\b|\bavoids? meat\b"
     r"|\bmeat[- ]free\b", " vegetarian "),
    (r"\beats? (?:fish|seafood) but not meat\b", " pescatarian "),
    (r"\beats? (?:meat|everything)\b|\bmeat[- ]eater\b", " omnivore "),
    (r"\bcan not (?:eat|have|tolerate|digest)\b", " allergic to "),
    # Commuting: "takes the train to work" = "commutes to work by train"; "bikes to school" and
    # "walks to school" are rival ways to one place.
    (r"\b(?:takes?|took|taking|rides?|rode|riding) (?:the |a |an |his |her |their |my )?"
     r"(bus|train|tram|subway|metro|ferry|bike|bicycle|car|scooter) to (" + _PLACES + r")\b",
     r" commute to \2 by \1 "),
    (r"\b(?:commutes?|commuting|goes|go|went|gets|get|travels?) (?:in )?to (" + _PLACES
     + r") (?:by|on|via) (?:the |a |an )?(\w+)", r" commute to \1 by \2 "),
    (r"\b(?:cycles?|cycled|bikes?|biked|cycling|biking) to (" + _PLACES + r")\b",
     r" commute to \1 by bike "),
    (r"\b(?:walks?|walked|walking) to (" + _PLACES + r")\b", r" commute to \1 by foot "),
    (r"\b(?:drives?|drove|driving) to (" + _PLACES + r")\b", r" commute to \1 by car "),
    # Commuting is going to work: "commutes by bike" = "cycles to work".
    (r"\bcommutes? (?:by|on|via) (?:the |a |an )?", " commute to work by "),
    (r"\bcommute to the office\b", " commute to work "),
    # Waking: "gets up at 6" = "wakes up at 6" = "rises at 6".
    (r"\b(?:gets?|got|getting) up\b|\b(?:wakes?|woke|waking)(?: up)?\b", " wake up "),
    # Seats: "likes to sit by the window" = "likes window seats".
    (r"\bsit(?:s|ting)? (?:by|at|on|in|next to|near) (?:the )?(window|aisle)\b", r" \1 seat "),
    # Work, language, family, hobbies: one fact, several idioms.
    (r"\b(?:is|are|am|was) (?:employed|hired) (?:at|by|with)\b|\bworks? for\b", " works at "),
    (r"\b(?:is|are|am) fluent in\b", " speaks fluent "),
    (r"\bspeaks? (\w+) fluently\b", r" speaks fluent \1 "),
    (r"\b(?:is|are|am) (?:the |a )?(?:parent|mother|father|mom|mum|dad) of\b", " has "),
    (r"\b(?:learn\w*|study\w*) (?:how )?to play (?:the )?", " learning "),
    (r"\btak(?:es|e|ing) (\w+) lessons\b", r" learning \1 "),
    (r"\b(?:is|are|am) (?:really )?(?:into|keen on)\b", " likes "),
    # Enthusiasm idioms: "is crazy about jazz" = "loves jazz"; "not a fan of" is a dislike ("a
    # fan of" alone is a supporter: see `correction_patterns`).
    (r"\b(?:is|are|am) not (?:a |an )?(?:big |huge |great )?fan of\b", " dislikes "),
    (r"\b(?:is|are|am) (?:crazy about|passionate about|mad about|obsessed with|a lover of)\b",
     " likes "),
    # "calls Leeds home" = "'s home is in Leeds" = "lives in Leeds".
    (r"\bcalls? (\w+(?:-\w+)?) home\b", r" lives in \1 "),
    (r"\b(user|my|their|his|her) home is (?:in|located in)\b", r" \1 lives in "),
    (r"\b(?:stays?|keeps?|stayed|kept) away from\b|\bsteers? clear of\b", " avoids "),
    (r"\bnight owl\b", " evening person "),
    (r"\b(?:early bird|morning person|early riser)\b", " morning person "),
    # Dates and times: "born on July 9" = "birthday is July 9"; "9th of July" = "July 9";
    # "7 in the morning" = "7am".
    (r"\b(?:was|were) born on\b", " birthday is "),
    (r"\b(\d{1,2})(?:st|nd|rd|th)? of (january|february|march|april|may|june|july|august|"
     r"september|october|november|december)\b", r" \2 \1 "),
    (r"\b(\d{1,2}(?::\d\d)?) in the morning\b", r" \1am "),
    (r"\b(\d{1,2}(?::\d\d)?) (?:in the (?:afternoon|evening)|at night)\b", r" \1pm "),
    # Bedtime: "goes to bed at 10" = "bedtime is 10".
    (r"\b(?:goes|go|went|going|gets?|got|getting) to (?:bed|sleep)(?: at| around| by)?\b",
     " bedtime is "),
    (r"\bmother tongue\b|\bnative tongue\b|\bfirst language\b", " native language "),
    # A scheduled thing "starts at 9" = "is at 9".
    (r"\b(?:starts?|begins?|kicks? off|takes? place) (?=at\s+(?:\d|noon|midnight))", " is "),
    (r"\b(?:ends?|finishes|finish|wraps? up) (?=at\s+(?:\d|noon|midnight))", " end is "),
    # "every Monday" = "on Mondays", "each morning" = "in the morning".
    (r"\b(?:every|each) (monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekday|"
     r"weekend|morning|afternoon|evening)\b", r" on \1 "),
    # Reporting line: "reports to Tomás" names the manager ("manager is Tomás").
    # (only after a person: "likes reports to include tables" is about documents)
    (r"\b(user|i|they|he|she|we|who)\s+(?:now |still |directly )?reports? (?:directly )?to\b",
     r" \1 manager is "),
    # Hometown.
    (r"\bgrew up in\b|\b(?:is|are|am|was|comes?) originally from\b", " hometown is "),
    # Tolerance reads as liking: "is fine with phone calls now" answers "dislikes calls".
    (r"\b(?:is|are|am) (?:fine|ok|okay|comfortable|happy) with\b|\bnot mind\b", " like "),
    # Names: "Biscuit is the name of the dog" = "the dog is named Biscuit".
    (r"\bis (?:the )?name of\b", " is "),
    # Comparisons: "likes X better than Y" = "prefers X over Y".
    (r"\b(?:much )?(?:better|more) than\b", " over "),
    (r"\bahead of\b|\bprior to\b", " before "),
    # Preference for consuming something is a preference for the thing.
    (r"\b((?:prefer|like|love|enjoy|want|rather)\w*) (?:to )?(?:drink|eat)(?:ing)?\b",
     r" \1 "),
    # Category nouns that name the same value.
    (r"\b(metric|imperial) (?:system|units?|measurements?)\b", r" \1 units "),
    (r"\b(dark|light) (?:theme|mode|color scheme|colour scheme)s?\b", r" \1 mode "),
    (r"\bslide ?decks?\b", " slides "),
    (r"\bpush notifications?\b|\bpush alerts?\b", " push "),
    (r"\bbullet(?:ed)?[- ]?(?:points?|lists?|form)\b|\bbullets\b", " bullets "),
    (r"\bfull (?:sentences|paragraphs)\b|\bparagraphs\b|\bprose\b", " prose "),
    (r"\b(football|soccer|sports?|baseball|basketball|hockey|rugby|cricket) club\b",
     r" \1 team "),
    (r"\bcar is (an?) ", r" drives \1 "),
    (r"\b(economy|business|first|premium(?: economy)?) class\b", r" \1 "),
    (r"\b(decaf|regular|caffeinated) coffee\b", r" \1 "),
    (r"\bpart[- ]time\b", " parttime "),
)

# Applied before correction markers are read, where a marker would otherwise eat the words.
EARLY_EQUIVALENCES: tuple[tuple[str, str], ...] = (
    # A state that ends in an event: the event says the state no longer holds ("is pregnant"
    # -> "had the baby"). A dated birth ("had
    # her first baby in 2019") may be another child, so a year keeps it an event.
    (r"\b(?:had|has had|gave birth to) (?:the|their|her|his) baby\b(?!.*\b(?:19|20)\d\d\b)"
     r"|\bgave birth\b(?!.*\b(?:19|20)\d\d\b)", " is no longer pregnant "),
    # Weariness ends a liking: "has grown tired of tennis" = "no longer likes tennis".
    (r"\b(?:has |have )?(?:grown|grew|gotten|got|getting|is|are) (?:tired|sick|bored) of\b"
     r"|\blost interest in\b|\bfell out of love with\b", " no longer likes "),
    # Marrying is becoming married ("engaged to Sam" -> "married Sam in June").
    (r"\b(user|i|he|she|they) married\b", r"\1 became married to"),
    # "turned subtitles off" = "turned off subtitles", a reversal.
    (r"\b(turn|switch)(ed|s|ing)? (?:the |my |their |all )?(\w+) off\b", r"\1\2 off \3"),
    # Back to work after retirement: a new employment status.
    (r"\b(?:went|go|goes|gone|is|are|was|returned|returns|came|comes) back to work(?:ing)?\b"
     r"|\breturned to work(?:ing)?\b|\b(?:came|comes) out of retirement\b",
     " is back to employed "),
)
