"""Named kinds of things for the correction detector: brands, banks, shops, airlines, services,
devices, sports, instruments and the like, plus verbs that rival each other in one slot.

Pure data, offline. Unlike the attribute scales of `correction_knowledge` (mild / hot, dark /
light), a person often has several of these at once (two banks, two streaming services), so two
members of one kind compete only where the note says the slot holds one value: a correction
marker ("uses Hoka now", "switched to Lidl") or a one-value slot ("User's bank is Chase").
`correction_lexicon` merges the kinds into its value classes and keeps their names in
`OPEN_CLASSES` for that gate. Multi-word names are joined by `NAMES` first ("credit union" ->
"credit-union") so that they stay one value.
"""

from __future__ import annotations

from worker.corrections import business as business

OPEN_CLASSES = {
    "bank": "chase barclays hsbc lloyds natwest santander monzo revolut citibank citi "
            "wells-fargo bofa capital-one schwab starling nationwide halifax credit-union "
            "rabobank abn-amro bunq deutsche-bank commerzbank sparkasse",
    "grocer": "aldi lidl tesco sainsbury asda waitrose morrisons walmart costco kroger "
              "whole-foods trader-joe safeway albert-heijn carrefour edeka rewe ocado",
    "retailer": "amazon ebay etsy ikea zara uniqlo primark zalando asos",
    "airline": "klm delta easyjet ryanair lufthansa emirates jetblue southwest vueling iberia "
               "wizzair qantas air-france british-airways united-airlines american-airlines "
               "transavia norwegian-air",
    "sportswear": "nike adidas hoka asics brooks puma reebok saucony salomon new-balance "
                  "under-armour mizuno on-running",
    "carmake": "toyota honda ford bmw audi volkswagen vw volvo kia hyundai mercedes skoda "
               "renault peugeot fiat mazda subaru nissan porsche jeep lexus tesla polestar",
    "phone": "iphone pixel samsung galaxy oneplus xiaomi huawei nokia motorola fairphone",
    "computer": "macbook thinkpad dell lenovo asus acer chromebook imac",
    "pointer": "mouse trackpad touchpad trackball",
    "keyboard_layout": "qwerty dvorak azerty colemak qwertz",
    "streaming": "netflix hulu disney hbo youtube twitch spotify deezer tidal pandora "
                 "audible apple-music youtube-music",
    "social": "instagram facebook twitter tiktok linkedin reddit mastodon bluesky snapchat",
    "notes_app": "notion obsidian evernote onenote todoist trello asana jira confluence "
                 "bear logseq roam",
    "password_manager": "bitwarden lastpass keepass dashlane 1password",
    "cloud_storage": "icloud dropbox google-drive onedrive google-photos",
    "crypto": "bitcoin ethereum solana dogecoin cardano",
    "payment": "cash credit-card debit-card paypal venmo apple-pay google-pay cheque",
    "instrument": "piano guitar violin cello drums ukulele flute saxophone trumpet clarinet "
                  "harp banjo accordion harmonica viola trombone",
    "sport": "football soccer tennis golf basketball baseball rugby cricket hockey volleyball "
             "badminton squash yoga pilates crossfit boxing padel pickleball",
    "beverage": "coffee tea cocoa matcha chai",
    "coffee_drink": "espresso latte cappuccino americano macchiato mocha flat-white cortado",
    "alcohol": "beer wine whisky whiskey gin vodka rum cider sake",
    "medicine": "ibuprofen paracetamol acetaminophen aspirin naproxen tylenol advil",
    "dwelling": "apartment house condo townhouse bungalow cottage",
    "search_engine": "google bing duckduckgo ecosia",
    "smart_speaker": "echo alexa homepod",
    "booking_site": "booking-com airbnb expedia vrbo hotels-com",
    "fitness_app": "strava garmin fitbit myfitnesspal cronometer peloton",
    "city": "london paris berlin munich hamburg amsterdam rotterdam madrid barcelona lisbon "
            "porto rome milan vienna zurich geneva brussels copenhagen stockholm oslo helsinki "
            "dublin edinburgh manchester leeds bristol prague warsaw budapest athens istanbul "
            "new-york los-angeles san-francisco chicago boston seattle austin toronto "
            "vancouver montreal sydney melbourne tokyo singapore dubai",
    "country": "germany france spain portugal italy netherlands belgium austria switzerland "
               "uk usa canada ireland sweden norway denmark finland poland japan australia "
               "mexico brazil india china",
    "photo_format": "raw jpeg jpg png heic tiff webp",
    # Plant milks are drunk side by side ("drinks oat milk" / "almond milk").
    "milk_type": "oat almond soy coconut cashew skim semi-skimmed lactose-free",
    **business.OPEN_CLASSES,
}

# Closed scales that sit beside the kinds above; one thing has one value of each (one steak
# has one doneness, one person one time zone), so they compete wherever they stand.
ATTRIBUTE_SCALES = {
    "doneness": "medium-rare medium-well",
    "size": "xxs xs xl xxl",
    "work_hours": "fulltime parttime retired",  # "works full-time" -> "retired last year"
    "timezone": "cet cest eet est edt cst mst pst pdt gmt utc bst ist jst aest",
}
ATTRIBUTE_NAMES = ("doneness", "size", "timezone", "work_hours")

# Multi-word names joined into one token before tokenizing (lower-cased patterns).
NAMES: tuple[tuple[str, str], ...] = (
    (r"\bwells fargo\b", " wells-fargo "),
    (r"\bbank of america\b", " bofa "),
    (r"\bcapital one\b", " capital-one "),
    (r"\babn amro\b", " abn-amro "),
    (r"\bdeutsche bank\b", " deutsche-bank "),
    (r"\bwhole foods\b", " whole-foods "),
    (r"\btrader joe'?s\b", " trader-joe "),
    (r"\balbert heijn\b", " albert-heijn "),
    (r"\bair france\b", " air-france "),
    (r"\bbritish airways\b", " british-airways "),
    (r"\bunited airlines\b", " united-airlines "),
    (r"\bamerican airlines\b", " american-airlines "),
    (r"\bnew balance\b", " new-balance "),
    (r"\bunder armou?r\b", " under-armour "),
    (r"\bapple music\b", " apple-music "),
    (r"\byoutube music\b", " youtube-music "),
    (r"\bapple pay\b", " apple-pay "),
    (r"\bgoogle pay\b", " google-pay "),
    (r"\bgoogle drive\b", " google-drive "),
    (r"\bgoogle photos\b", " google-photos "),
    (r"\bflat whites?\b", " flat-white "),
    (r"\bmedium[- ]rare\b", " medium-rare "),
    (r"\bmedium[- ]well\b", " medium-well "),
    (r"\bamazon echo\b", " echo "),
    (r"\bhotels\.com\b", " hotels-com "),
    (r"\bbooking\.com\b", " booking-com "),
    (r"\bsize (xxs|xs|s|small)\b", " size small "),
    (r"\bsize (m|medium)\b", " size medium "),
    (r"\bsize (l|large)\b", " size large "),
    (r"\b(?:clothing|clothes) size is\b", " wears size "),
    *business.NAMES,
)

# Verbs that rival each other for one object, as pairs: "rents an apartment" -> "owns an
# apartment" is a correction, not a second fact ("bought" and "owns" are not rivals).
RIVAL_VERBS = (
    "rent own", "rent buy", "lease own", "lease buy", "accept decline", "accept reject",
    "allow block", "allow forbid", "include exclude", "show hide", "mute unmute",
    "subscribe unsubscribe", "enable disable",
)
