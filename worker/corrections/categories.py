"""Curated category -> member knowledge for the correction detector's entailment check
(`correction_meaning.implies`): a note naming a member implies one naming its category, so the
later, specific note refines the earlier ("drives an electric car" <- "drives a Tesla", "lives
in Japan" <- "lives in Osaka", "plays a string instrument" <- "plays the viola").

Pure data, offline, general facts about the world (a city's country, a dish's cuisine, a
breed's species), never a particular note. Same format as `correction_knowledge.HYPERNYMS`:
keys are category words (several spellings of one category in one key), values name value
classes of the lexicon, and words after "+" are further members. A category word may be an
adjective: "electric car" needs a member covered by both "electric" and "car", so one member
(Tesla) stands for the whole compound. `correction_lexicon` merges these into `HYPONYMS`.
"""

from __future__ import annotations

import re

# Countries and their well-known cities, regions (state, province) included: "lives in Canada"
# is refined by "lives in Saskatoon, Saskatchewan". Multi-word names are joined by NAMES below.
_COUNTRIES = {
    "usa america": "new-york los-angeles san-francisco chicago boston seattle austin houston "
                   "dallas denver miami atlanta portland phoenix philadelphia detroit "
                   "nashville san-diego las-vegas minneapolis baltimore pittsburgh brooklyn "
                   "manhattan california texas florida oregon washington colorado arizona "
                   "massachusetts illinois georgia ohio michigan virginia utah hawaii alaska",
    "california": "los-angeles san-francisco san-diego sacramento san-jose oakland berkeley",
    "texas": "austin houston dallas san-antonio el-paso fort-worth",
    "florida": "miami orlando tampa jacksonville",
    "washington": "seattle spokane tacoma",
    "massachusetts": "boston cambridge worcester",
    "illinois": "chicago",
    "colorado": "denver boulder",
    "oregon": "portland eugene",
    "ontario": "toronto ottawa",
    "quebec": "montreal",
    "bavaria": "munich nuremberg",
    "canada": "toronto vancouver montreal ottawa calgary edmonton winnipeg halifax quebec "
              "saskatoon ontario saskatchewan alberta manitoba "
              "british-columbia nova-scotia",
    "uk britain england": "london manchester leeds bristol liverpool birmingham oxford "
                          "cambridge brighton newcastle sheffield nottingham "
                          "edinburgh glasgow cardiff belfast scotland wales",
    "scotland": "edinburgh glasgow aberdeen dundee inverness",
    "ireland": "dublin galway limerick",
    "germany": "berlin munich hamburg frankfurt cologne stuttgart dusseldorf leipzig dresden "
               "bavaria",
    "france": "paris lyon marseille bordeaux toulouse lille strasbourg nantes provence",
    "spain": "madrid barcelona valencia seville malaga bilbao granada ibiza mallorca",
    "portugal": "lisbon porto faro madeira algarve",
    "italy": "rome milan florence venice naples turin bologna sicily tuscany sardinia",
    "netherlands": "amsterdam rotterdam utrecht the-hague eindhoven",
    "belgium": "brussels antwerp ghent bruges",
    "switzerland": "zurich geneva basel bern lausanne",
    "austria": "vienna salzburg innsbruck graz",
    "sweden": "stockholm gothenburg malmo",
    "norway": "oslo bergen trondheim",
    "denmark": "copenhagen aarhus",
    "finland": "helsinki tampere turku",
    "iceland": "reykjavik",
    "poland": "warsaw krakow gdansk wroclaw",
    "czechia czech-republic": "prague brno",
    "hungary": "budapest",
    "greece": "athens thessaloniki crete santorini",
    "turkey": "istanbul ankara izmir antalya",
    "japan": "tokyo osaka kyoto yokohama sapporo nagoya fukuoka kobe hiroshima okinawa",
    "china": "beijing shanghai shenzhen guangzhou chengdu hong-kong",
    "korea south-korea": "seoul busan incheon",
    "india": "mumbai delhi new-delhi bangalore bengaluru chennai hyderabad kolkata pune goa",
    "thailand": "bangkok chiang-mai phuket",
    "vietnam": "hanoi saigon ho-chi-minh-city da-nang",
    "indonesia": "jakarta bali",
    "philippines": "manila cebu",
    "singapore": "singapore",
    "malaysia": "kuala-lumpur penang",
    "australia": "sydney melbourne brisbane perth adelaide canberra",
    "new-zealand": "auckland wellington christchurch queenstown",
    "mexico": "mexico-city guadalajara monterrey cancun oaxaca",
    "brazil": "sao-paulo rio-de-janeiro brasilia",
    "argentina": "buenos-aires cordoba mendoza",
    "colombia": "bogota medellin cartagena",
    "peru": "lima cusco",
    "chile": "santiago valparaiso",
    "egypt": "cairo alexandria",
    "morocco": "marrakech casablanca fez",
    "south-africa": "cape-town johannesburg durban",
    "kenya": "nairobi mombasa",
    "nigeria": "lagos abuja",
    "israel": "tel-aviv jerusalem haifa",
    "uae": "dubai abu-dhabi",
}
# Regions and the countries in them (a country brings its cities along: nesting is closed).
_REGIONS = {
    "europe": "uk england scotland ireland germany france spain portugal italy netherlands "
              "belgium switzerland austria sweden norway denmark finland iceland poland czechia "
              "hungary greece",
    "scandinavia nordic": "sweden norway denmark finland iceland",
    "asia": "japan china korea india thailand vietnam indonesia philippines singapore malaysia",
    "africa": "egypt morocco south-africa kenya nigeria",
    "south-america latin-america": "brazil argentina colombia peru chile mexico",
    "oceania": "australia new-zealand",
    "middle-east": "israel uae turkey egypt",
    "abroad overseas": "",  # filled below: any country is abroad
    "country": "",
    "city": "",
}

# Cuisines and their well-known dishes: "loves Italian food" <- "loves risotto".
_CUISINES = {
    "italian": "pasta pizza risotto lasagna tiramisu gelato carbonara gnocchi spaghetti "
               "ravioli bruschetta focaccia pesto",
    "japanese": "sushi ramen sashimi tempura udon miso yakitori okonomiyaki onigiri soba",
    "chinese": "dumplings dim-sum chow-mein kung-pao peking-duck wonton fried-rice",
    "thai": "pad-thai green-curry tom-yum som-tam massaman",
    "indian": "curry biryani naan tikka masala dal samosa paneer tandoori vindaloo korma",
    "mexican": "tacos burritos enchiladas quesadillas guacamole nachos tamales fajitas",
    "french": "croissants crepes baguette ratatouille quiche escargot",
    "korean": "kimchi bibimbap bulgogi",
    "vietnamese": "pho banh-mi",
    "greek": "gyros souvlaki moussaka tzatziki feta baklava",
    "spanish": "paella tapas churros gazpacho",
    "middle-eastern lebanese": "hummus falafel shawarma tabbouleh",
    "ethiopian": "injera",
    "american": "burgers hot-dogs barbecue",
}

# Teams by sport and league: "follows a basketball team" <- "follows the Milwaukee Bucks".
_TEAMS = {
    "basketball nba": "lakers celtics warriors bucks knicks bulls nets raptors "
                      "mavericks nuggets clippers spurs rockets sixers 76ers cavaliers",
    "football soccer premier-league": "arsenal chelsea liverpool tottenham spurs everton "
                                      "man-united manchester-united man-city "
                                      "manchester-city newcastle-united aston-villa "
                                      "west-ham real-madrid barcelona juventus bayern "
                                      "dortmund psg ajax benfica porto celtic rangers "
                                      "ac-milan atletico",
    "american-football nfl": "patriots packers cowboys eagles chiefs steelers giants "
                             "49ers niners seahawks broncos ravens",
    "baseball mlb": "yankees red-sox dodgers mets cubs giants cardinals astros braves "
                    "mariners phillies",
    "hockey nhl": "maple-leafs canadiens bruins rangers oilers canucks penguins blackhawks",
}

# Music genres and artists known for them: "listens to jazz" <- "listens to Miles Davis".
_ARTISTS = {
    "jazz": "miles-davis john-coltrane coltrane ella-fitzgerald louis-armstrong "
            "duke-ellington thelonious-monk charlie-parker herbie-hancock bill-evans",
    "classical": "bach mozart beethoven chopin brahms vivaldi debussy tchaikovsky "
                 "rachmaninoff handel schubert",
    "rock": "led-zeppelin pink-floyd the-beatles beatles queen nirvana radiohead foo-fighters",
    "pop": "taylor-swift beyonce adele dua-lipa ed-sheeran ariana-grande",
    "hip-hop rap": "kendrick-lamar drake eminem kanye jay-z nas",
    "country": "dolly-parton johnny-cash garth-brooks",
    "metal": "metallica iron-maiden black-sabbath slayer",
    "blues": "bb-king muddy-waters",
}

# Wider categories. Class names (before "+") refer to the lexicon's value classes.
CATEGORIES = {
    # Vehicles: makes imply a car; electric models imply an electric car.
    "car vehicle automobile": "carmake +prius civic corolla golf outback model-3 model-y "
                              "leaf mustang camry",
    "electric ev": "+tesla polestar rivian lucid leaf model-3 model-y bolt e-tron ioniq id4",
    "hybrid": "+prius",
    "suv": "+outback rav4 cx-5 forester crv cr-v x5 q5",
    "motorbike motorcycle": "+harley ducati vespa kawasaki yamaha triumph",
    "transit public-transit": "+bus train subway metro tram ferry light-rail underground "
                              "tube",
    # Sports and their kinds.
    "racket racquet": "+tennis squash badminton padel pickleball table-tennis racquetball",
    "team-sport": "+football soccer basketball baseball rugby cricket hockey volleyball "
                  "handball",
    "martial-art martial": "+karate judo taekwondo jiu-jitsu bjj aikido kung-fu boxing "
                           "kickboxing muay-thai",
    "sport": "+running swimming cycling climbing skiing snowboarding surfing rowing hiking "
             "karate judo taekwondo jiu-jitsu bjj boxing fencing archery skating",
    "exercise workout": "+running swimming cycling yoga pilates crossfit weightlifting "
                        "kettlebell spinning rowing",
    "game video-game": "+minecraft fortnite zelda mario rocket-league valorant overwatch "
                       "league-of-legends dota fifa halo tetris pokemon elden-ring "
                       "animal-crossing call-of-duty",
    "board-game": "+chess catan monopoly scrabble go risk carcassonne ticket-to-ride",
    # Instruments by family.
    "instrument": "+bassoon oboe tuba horn double-bass organ synthesizer mandolin sitar "
                  "bagpipes marimba xylophone bass",
    "string": "+violin viola cello double-bass harp guitar bass banjo mandolin ukulele sitar",
    "brass": "+trumpet trombone tuba horn french-horn cornet euphonium",
    "woodwind wind": "+flute clarinet oboe bassoon saxophone recorder piccolo",
    "percussion": "+drums marimba xylophone timpani cajon",
    # Pets and breeds.
    "dog": "+shepherd german-shepherd golden-retriever border-collie shih-tzu chihuahua "
           "rottweiler doberman boxer schnauzer maltese labradoodle cockapoo greyhound "
           "dalmatian mastiff akita shiba",
    "cat": "+maine-coon british-shorthair abyssinian burmese",
    "fish": "+goldfish betta guppy koi",
    "reptile": "+snake lizard gecko tortoise turtle iguana python",
    "rodent": "+hamster gerbil rat mouse guinea-pig chinchilla",
    # Professions and specialties.
    "doctor": "+pediatrician cardiologist surgeon dermatologist neurologist psychiatrist "
              "oncologist radiologist anesthesiologist gp physician",
    "scientist researcher": "+biologist chemist physicist geologist ecologist hydrologist "
                            "neuroscientist",
    "teacher educator": "+professor lecturer tutor",
    "lawyer attorney": "+solicitor barrister",
    "healthcare health medicine medical": "+hospital clinic nurse doctor pediatrician "
                                          "surgeon pharmacy pharmacist nursing dentist",
    "finance financial banking": "+bank banker accountant accounting insurance investment "
                                 "analyst fintech trading hedge-fund",
    "tech technology software": "+startup developer programmer engineer google microsoft "
                                   "apple amazon meta",
    "education": "+school university college teacher professor kindergarten",
    "hospitality": "+hotel restaurant cafe bar",
    # Degrees.
    "degree": "+bachelorsdegree mastersdegree doctorate mba md jd",
    "graduate postgraduate advanced": "+mastersdegree doctorate mba md jd",
    "undergraduate": "+bachelorsdegree",
    # Languages by family or region (the lexicon's "language" class lists them all).
    "asian": "+japanese chinese mandarin cantonese korean vietnamese thai hindi tagalog "
             "indonesian malay bengali urdu tamil",
    "european": "+english german french spanish italian portuguese dutch polish swedish "
                "norwegian danish finnish greek czech hungarian romanian",
    "romance": "+french spanish italian portuguese romanian catalan",
    "slavic": "+russian polish czech ukrainian serbian croatian bulgarian slovak",
    "scandinavian nordic": "+swedish norwegian danish icelandic finnish",
    "functional": "+haskell elixir erlang clojure ocaml scala elm lisp fsharp",
    "language": "proglang +haskell elixir erlang clojure ocaml elm lisp fsharp tagalog "
                "filipino swahili thai malay persian farsi urdu bengali punjabi tamil telugu "
                "marathi romanian hungarian bulgarian serbian croatian slovak slovenian "
                "lithuanian latvian estonian icelandic catalan basque latin esperanto amharic "
                "yoruba zulu afrikaans khmer nepali mongolian georgian armenian albanian "
                "welsh irish gaelic sign-language asl",
    # Medications and conditions.
    "medication medicine drug pill": "+ibuprofen paracetamol acetaminophen aspirin "
                                     "metformin insulin statin antihistamine "
                                     "antidepressant inhaler sertraline amlodipine "
                                     "lisinopril losartan metoprolol atorvastatin "
                                     "simvastatin levothyroxine omeprazole albuterol "
                                     "gabapentin prednisone amoxicillin fluoxetine "
                                     "escitalopram cetirizine loratadine montelukast",
    "condition illness disease": "+asthma diabetic arthritis epilepsy migraine eczema "
                                 "hypertension celiac crohn psoriasis lupus adhd",
    "chronic": "+asthma diabetic arthritis epilepsy migraine eczema hypertension celiac crohn "
               "psoriasis lupus",
    "allergic": "+hay-fever",
    # Devices and brands, apps and services.
    "phone": "phone",
    "laptop computer": "+macbook thinkpad chromebook surface xps",
    "tablet": "+ipad",
    "smartwatch": "+apple-watch garmin fitbit",
    "smart-speaker": "smart_speaker",
    "streaming streaming-service": "streaming",
    "notes-app": "notes_app",
    "app application": "streaming social notes_app fitness_app password_manager booking_site",
    "password-manager": "password_manager +1password",
    "social-media": "social",
    "browser": "browser",
    "search-engine": "search_engine",
    "fitness-app tracker": "fitness_app",
    # Diets.
    "restricted special": "+vegan vegetarian pescatarian keto paleo low-fodmap gluten-free "
                          "low-carb dairy-free kosher halal low-sodium",
    "plant-based": "+vegan",
    # Food and garden.
    "vegetable veg veggie": "+kale pea carrot lettuce spinach tomato potato onion zucchini "
                            "courgette cucumber pepper broccoli cabbage bean beet radish "
                            "squash pumpkin garlic",
    "herb": "+basil rosemary thyme mint parsley cilantro coriander oregano sage dill chive",
    "fruit": "+apple pear strawberry raspberry blueberry cherry plum peach grape lemon fig",
    "flower": "+rose tulip dahlia sunflower lavender peony daisy orchid",
    "berry": "+strawberry raspberry blueberry blackberry",
    # Meetings by kind.
    "meeting": "+standup review sync retro retrospective",
}


def _build() -> dict[str, str]:
    every_country = " ".join(k.split()[0] for k in _COUNTRIES)
    every_city = " ".join(_COUNTRIES.values())
    regions = dict(_REGIONS)
    regions["abroad overseas"] = every_country
    regions["country"] = every_country
    regions["city"] = every_city
    cuisine_dishes = " ".join(_CUISINES.values())
    teams = " ".join(_TEAMS.values())
    extra = {
        "food dish meal": cuisine_dishes,
        "team club": teams,
        "music genre": " ".join(_ARTISTS),
    }
    table: dict[str, str] = {}
    for source in (_COUNTRIES, regions, _CUISINES, _TEAMS, _ARTISTS, extra):
        for key, members in source.items():
            table[key] = (table.get(key, "") + " +" + members).strip()
    for key, spec in CATEGORIES.items():
        classes, _, members = spec.partition("+")
        old_classes, _, old_members = table.get(key, "").partition("+")
        table[key] = f"{old_classes} {classes} +{old_members} {members}".strip()
    return table


# Everything merged: category key -> "classes +members".
ALL = _build()

# Multi-word names and categories joined into one token before tokenizing (lower-cased), so
# that a member or a compound category stays one value ("Rocket League", "password manager").
# Only the spaced spelling is rewritten: a hyphenated one is already kept whole by the parser.
# One alternation for all of them keeps parsing fast.
_HYPHENATED = sorted({w for spec in ALL.values() for w in spec.replace("+", " ").split()
                      if "-" in w} | {k for key in ALL for k in key.split() if "-" in k},
                     key=len, reverse=True)
_JOIN = re.compile(r"\b(" + "|".join(re.escape(p).replace("\\-", " ") for p in _HYPHENATED)
                   + r")s?\b")
# Compound categories said several ways.
NAMES: tuple[tuple[str, str], ...] = (
    (r"\bnote[- ]?taking (?:app|tool)s?\b|\bnotes? apps?\b", " notes-app "),
    (r"\bstreaming (?:service|platform|app)s?\b", " streaming-service "),
    (r"\bsocial (?:media|network)s?\b", " social-media "),
    (r"\bpublic (?:transit|transport|transportation)\b", " public-transit "),
    (r"\bvideo ?games?\b", " video-game "),
    (r"\bmartial arts?\b", " martial-art "),
    (r"\bteam sports?\b", " team-sport "),
    (r"\bsmart speakers?\b", " smart-speaker "),
    (r"\bfitness (?:app|tracker)s?\b", " fitness-app "),
)


def join(text: str) -> str:
    """Join the spaced spelling of every multi-word member ("rocket league" -> "rocket-league")."""
    if " " not in text:
        return text
    return _JOIN.sub(lambda m: " " + m.group(1).replace(" ", "-") + " ", text)


# Raw hyphenated words the tokenizer must keep whole ("low-fodmap", "rocket-league").
WORDS = frozenset(w for spec in ALL.values() for w in spec.replace("+", " ").split()) | frozenset(
    k for key in ALL for k in key.split())
