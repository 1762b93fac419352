"""Curated equivalences of everyday English for the correction detector: kinship and common
synonyms, agent nouns and nominalizations, light-verb idioms, abbreviations and number words.

Pure data, offline. Each entry is a general fact about the language ("mom" = "mother", "goes
running" = "runs", "is a smoker" = "smokes", "Central European Time" = CET), never a particular
note. `correction_lexicon` folds the one-word maps into its canonical form; `correction_patterns`
applies the phrase rewrites before the knowledge idioms of `correction_knowledge`.
"""

from __future__ import annotations

from worker.corrections import vocabulary as vocabulary

# One word -> its canonical word. Plural and inflected forms meet through the stemmer, so only
# the base form is listed unless the stemmer cannot reach it.
SYNONYMS = {
    # Kinship: the informal and formal names of one relative.
    "mom": "mother", "mum": "mother", "mommy": "mother", "mummy": "mother", "mama": "mother",
    "dad": "father", "daddy": "father", "papa": "father", "grandma": "grandmother",
    "granny": "grandmother", "nana": "grandmother", "grandpa": "grandfather",
    "granddad": "grandfather", "grandad": "grandfather", "hubby": "husband",
    "bf": "boyfriend", "gf": "girlfriend", "folks": "parents", "grandkids": "grandchildren",
    # Agent nouns name the habit: "is a runner" = "runs", "is a smoker" = "smokes".
    "runner": "run", "jogger": "run", "swimmer": "swim", "cyclist": "bike", "biker": "bike",
    "hiker": "hike", "climber": "climb", "skier": "ski", "surfer": "surf", "golfer": "golf",
    "smoker": "smoke", "supporter": "support", "gardener": "garden", "baker": "bake",
    "knitter": "knit", "gamer": "game", "gaming": "game", "commuter": "commute",
    "tenant": "rent", "renter": "rent", "volunteering": "volunteer", "meditation": "meditate",
    "photography": "photograph", "journaling": "journal", "reader": "read", "drinker": "drink",
    "singer": "sing", "dancer": "dance", "painter": "paint", "nightly": "night",
    # A lease is what the tenant pays rent on: "the lease is $900" = "the rent is $900".
    "lease": "rent",
    # Nominalizations and adjectives of one state: "has a fear of" = "is afraid of".
    "fear": "afraid", "scared": "afraid", "frightened": "afraid", "phobia": "afraid",
    "anxiety": "anxious", "diabetes": "diabetic", "pregnancy": "pregnant",
    "retirement": "retired", "intolerance": "intolerant", "beginner": "novice",
    "newbie": "novice",
    # Everyday synonyms and British / American pairs.
    "purchase": "buy", "purchased": "buy", "autumn": "fall", "trainers": "sneakers",
    "cellphone": "phone", "smartphone": "phone", "cell": "phone", "physio": "physiotherapist",
    "lorry": "truck", "holidays": "holiday", "e-book": "ebook", "e-books": "ebook",
    "preschool": "kindergarten", "fave": "favorite",
    "tshirt": "t-shirt", "tee": "t-shirt", "specs": "glasses", "eyeglasses": "glasses",
    "spectacles": "glasses", "doggo": "dog", "kitty": "cat", "clothing": "clothes",
    "second-hand": "secondhand", "pre-owned": "secondhand",
    # Numbers past twelve (the lexicon has zero to twelve).
    "thirteen": "13", "fourteen": "14", "fifteen": "15", "sixteen": "16", "seventeen": "17",
    "eighteen": "18", "nineteen": "19", "twenty": "20", "thirty": "30", "forty": "40",
    "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80", "ninety": "90",
    "dozen": "12",
    # Units.
    "secs": "second", "sec": "second", "cm": "centimeter", "centimetre": "centimeter",
    "mm": "millimeter", "millimetre": "millimeter", "mi": "mile", "g": "gram", "grams": "gram",
    "ml": "milliliter", "millilitre": "milliliter", "litre": "liter", "litres": "liter",
    "oz": "ounce", "kb": "kilobyte", "mb": "megabyte", "gb": "gigabyte", "tb": "terabyte",
    "kib": "kibibyte", "mib": "mebibyte", "gib": "gibibyte", "tib": "tebibyte",
    "kwh": "kilowatt-hour", "mj": "megajoule", "kj": "kilojoule", "kcal": "kilocalorie",
    # Size and speed words of one meaning ("big kitchen" = "large kitchen").
    "big": "large", "bigger": "larger", "biggest": "largest", "quick": "fast",
    "quicker": "faster", "quickest": "fastest", "speedy": "fast", "rapid": "fast",
    # Plurals the suffix stripper cannot reach ("chart axes" = "every chart axis").
    "axes": "axis", "analyses": "analysis", "criteria": "criterion", "mice": "mouse",
    "teeth": "tooth", "geese": "goose", "women": "woman", "men": "man", "indices": "index",
    "diagnoses": "diagnosis", "theses": "thesis", "crises": "crisis",
    # Everyday synonyms of personal facts.
    "little": "small", "talk": "speak", "boss": "manager", "flat": "apartment",
    "flats": "apartment", "grandparents": "grandparent",
}

# Players named by their instrument: "is a guitarist" = "plays guitar".
AGENT_NOUNS = {
    "guitarist": "guitar", "pianist": "piano", "violinist": "violin", "cellist": "cello",
    "harpist": "harp", "bassist": "bass", "flautist": "flute", "flutist": "flute",
    "saxophonist": "saxophone", "clarinetist": "clarinet", "clarinettist": "clarinet",
    "drummer": "drums", "trumpeter": "trumpet", "organist": "organ", "violist": "viola",
    "trombonist": "trombone", "percussionist": "percussion", "banjoist": "banjo",
    "accordionist": "accordion", "harmonicist": "harmonica", "ukulelist": "ukulele",
}

# Multi-word names and idioms -> one form. Applied in order to the lower-cased note after the
# correction markers were taken out; a replacement never contains a correction marker.
PHRASES: tuple[tuple[str, str], ...] = (
    # Light verbs: "goes running" = "runs", "does the cooking" = "cooks", "does volunteer
    # work" = "volunteers", "does their own taxes" = "does their taxes".
    (r"\b(?:go|goes|went|going|gone) (\w{3,}ing)\b", r" \1 "),
    (r"\b(?:do|does|did|doing) (?:the |some |a lot of |lots of )?(\w{3,}ing)\b", r" \1 "),
    (r"\b(?:do|does|did|doing) (?:some |a lot of |lots of )?(\w+) work\b", r" \1 "),
    (r"\b(?:go|goes|went|going|gone|take|takes|took|taking|have|has|had|having) (?:for )?"
     r"(?:a |an )?(run|walk|swim|hike|jog|nap|shower|bath|stroll|bike ride|ride|drive)\b",
     r" \1 "),
    (r"\b(\w+) intake\b", r" \1 "),  # "tracks calorie intake" = "tracks calories"
    (r"\bon (my|their|his|her|our|your) own\b", " alone "),
    (r"\b(my|their|his|her|our|your) own\b", r" \1 "),
    (r"\bpass(?:ed|es)? away\b", " died "),
    # In-laws: "spouse's mother" = "mother-in-law".
    (r"\b(?:spouse|wife|husband|partner)(?:'s)? (mother|father|brother|sister|parents)\b",
     r" \1-in-law "),
    # "gave a talk at PyCon" = "spoke at PyCon".
    (r"\b(?:give|gives|gave|giving|given) (?:a |an )?(?:\w+ )?(?:talk|speech|presentation|"
     r"lecture|keynote)\b", " spoke "),
    (r"\bpersonal (?:best|record)\b", " personal-best "),
    (r"\bkilowatt[- ]hours?\b", " kilowatt-hour "),
    # "has a nut allergy" = "is allergic to nuts"; "has food allergies" names the category.
    (r"\b(?:has|have|had) (?:an? |some )?(?:severe |mild )?(\w+) allerg(?:y|ies)\b",
     r" is allergic to \1 "),
    (r"\bfor a living\b", " "),
    (r"\bevery night\b|\beach night\b", " nightly "),
    (r"\b(?:follows?|is on|eats?) an? (\w+(?:-\w+)?) diet\b", r" is \1 "),
    (r"\bspeaks? (\w+) natively\b|\bis an? native (\w+) speaker\b|\bnative speaker of "
     r"(\w+)\b|\bmain language is\b", r" native language is \1\2\3 "),
    # Agent nouns: "is a keen guitarist" = "plays guitar", "is a tennis player" = "plays
    # tennis", "is an Arsenal fan" = "supports Arsenal" (not "a fan of": see the patterns).
    # (the agent noun stays and is folded to its instrument by SYNONYMS below)
    (rf"\b(?:is|are|am|was|were) an? ((?:\w+ )?(?:{'|'.join(AGENT_NOUNS)}))\b", r" plays \1 "),
    (r"\b(?:is|are|am|was|were) an? ((?:\w+ )?\w+) player\b(?! of)", r" plays \1 "),
    (r"\b(?:is|are|am|was|were) an? (?:big |huge |massive |die-hard |diehard |lifelong |"
     r"loyal )?(\w+(?:[ -]\w+)?) (?:fan|supporter)\b(?! of)", r" support \1 "),
    # Degrees: "has a PhD" = "holds a doctorate", "MSc" = "master's degree".
    (r"\bph\.? ?d\b\.?|\bdoctoral degree\b|\bdoctorate\b", " doctorate "),
    (r"\bmasters? degree\b|\bmasters\b|\bm\.?sc\b|\bmeng\b|\bmphil\b"
     r"|\bmaster of (?:science|arts|engineering)\b", " mastersdegree "),
    (r"\bbachelors? degree\b|\bbachelors\b|\bb\.?sc\b|\bbachelor of (?:science|arts|"
     r"engineering)\b", " bachelorsdegree "),
    # Practising a discipline is doing it: "practices yoga" = "does yoga".
    (r"\bpracti[cs](?:es|e|ed|ing) (?=(?:yoga|pilates|meditation|tai chi|karate|judo|aikido|"
     r"taekwondo|kung fu|martial arts|mindfulness)\b)", " "),
    # A job is what one is: "works as a nurse" = "is a nurse".
    (r"\bworks? as (?:an? )?", " is a "),
    # Ownership nouns: "is a homeowner" = "owns a home", "is a dog owner" = "owns a dog".
    (r"\b(?:is|are|am) an? (\w+)[- ]?owner\b", r" owns \1 "),
    (r"\b(?:is|are|am) an? homeowner\b|\bhomeowner\b", " owns home "),
    # States said as idioms.
    (r"\bhard of hearing\b|\bhearing[- ]impaired\b", " hearing loss "),
    (r"\b(?:is|are|am) new to (\w+)", r" is novice \1 "),
    (r"\b(?:is|are|am) (?:getting|going to get|about to get) married\b|\bgets? married\b",
     " wedding is "),
    (r"\b(?:is|are|am) living with\b(?= (?:a |an )?(?:\w+ )?(?:disease|condition|"
     r"dementia|diabetes|cancer|asthma|arthritis|adhd|autism|depression|anxiety|"
     r"migraines?|epilepsy|hiv|ms|parkinson|alzheimer))", " has "),
    # Attending an institution is being in it: "son attends kindergarten" = "is in".
    (r"\b(?:is|are|am) (?:enrolled|a student) (?:in|at)\b|\battend(?:s|ed|ing)?\b"
     r"|\b(?:goes|go|going|went) to (?=(?:the )?(?:school|kindergarten|daycare|preschool|"
     r"college|university|church|classes|class|the gym|gym)\b)", " is in "),
    (r"\bopts? out of\b|\bopted out of\b", " not "),
    (r"\bduring the week\b|\bon weeknights\b", " on weekdays "),
    (r"\bat the weekends?\b|\bon the weekends?\b", " on weekends "),
    (r"\b(?:writes?|eats?|throws?) with (?:the |my |their |his |her )?(left|right) hand\b",
     r" is \1-handed "),
    (r"\b(coffee|tea) black\b|\bblack (coffee|tea)\b", r" \1\2 black "),
    (r"\b(coffee|tea) (?:without|with no) milk(?: or sugar)?\b", r" \1 black "),
    (r"\bis due\b(?: on| by)?", " deadline is "),
    (r"\b(\d+)\s*x\b(?= (?:a|per|every) )", r" \1 times "),
    # Abbreviations.
    (r"\b(?:two|2)[- ]factor(?: authentication| auth)?\b|\b2-?step verification\b", " 2fa "),
    (r"\bmulti[- ]factor(?: authentication| auth)?\b", " mfa "),
    (r"\btime zone\b", " timezone "),
    (r"\beastern european (?:standard |summer )?time\b", " eet "),
    (r"\bcentral european (?:standard |summer )?time\b", " cet "),
    (r"\b(?:us )?eastern (?:standard |daylight )?time\b", " est "),
    (r"\b(?:us )?central (?:standard |daylight )?time\b", " cst "),
    (r"\b(?:us )?mountain (?:standard |daylight )?time\b", " mst "),
    (r"\b(?:us )?pacific (?:standard |daylight )?time\b", " pst "),
    (r"\bgreenwich mean time\b", " gmt "),
    (r"\b(?:coordinated )?universal time\b", " utc "),
    (r"\bbritish summer time\b", " bst "),
    (r"\bindia(?:n)? standard time\b", " ist "),
    (r"\bjapan(?:ese)? standard time\b", " jst "),
    (r"\b(?:is|are|am|works?|lives?)\s+(?:on|in)\s+(cet|cest|eet|est|edt|cst|mst|pst|pdt|gmt|utc|"
     r"bst|ist|jst|aest)\b", r" timezone is \1 "),
    (r"\bnew york city\b|\bnew york\b|\bnyc\b", " new-york "),
    (r"\blos angeles\b|\bl\.a\.", " los-angeles "),
    (r"\bsan francisco\b", " san-francisco "),
    (r"\bthe united states(?: of america)?\b|\bthe u\.?s\.?a?\b(?!\w)", " usa "),
    (r"\bthe united kingdom\b|\bthe u\.?k\.?(?!\w)|\bgreat britain\b", " uk "),
    (r"\bthe netherlands\b|\bholland\b", " netherlands "),
    (r"\bcredit card\b", " credit-card "),
    (r"\bdebit card\b", " debit-card "),
    (r"\bcredit union\b", " credit-union "),
    (r"\baudio ?books?\b", " audiobook "),
    (r"\btext messages?\b|\btexting\b", " sms "),
)

SYNONYMS |= AGENT_NOUNS  # "plays guitarist" (rewritten "is a guitarist") = "plays guitar"
SYNONYMS |= vocabulary.SYNONYMS
PHRASES += vocabulary.PHRASES
