"""Generate the Larkfield tickets: data/train.csv, valid.csv, test.csv and SHA256SUMS.

Larkfield is a made-up home-and-garden shop. Every ticket is built from templates and fillers
by one `random.Random(SEED)`, so the same script always writes the same bytes:

    python data/generate.py            # (re)write the CSVs and SHA256SUMS next to this file
    python data/generate.py --out DIR  # write them into DIR instead
    python data/generate.py --check    # rebuild in memory; exit 1 naming every file that differs

Standard library only, so that the data can be rebuilt without the course's environment.
`build()` also returns each ticket's true team, which the data card uses to report the label noise.
"""

import argparse
import csv
import hashlib
import io
import random
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 1729
TEAMS = ("delivery", "returns", "payment", "warranty", "account")  # = ticketnet.TEAMS (a test checks)
SIZES = {"train": 4696, "valid": 600, "test": 600}
STYLES = ("plain", "short", "long", "typos", "negation", "two_topics", "boundary")
PLAIN_SHARE = 0.30  # the six other styles share the rest equally
NOISE_RATE = 0.015  # share of tickets, in every split, whose team is replaced by a wrong one
FILES = ("train.csv", "valid.csv", "test.csv", "SHA256SUMS")

# ---------------------------------------------------------------------------------------------
# Fillers: the things tickets talk about
# ---------------------------------------------------------------------------------------------

POWERED = """lawnmower|petrol lawnmower|robot mower|hedge trimmer|strimmer|leaf blower|pressure washer|
chainsaw|garden shredder|pond pump|fountain pump|patio heater|cordless drill|jigsaw|orbital sander|
table lamp|floor lamp|desk lamp|wall light|security light|string of fairy lights|dehumidifier|
vacuum cleaner|kettle|toaster|fan heater|electric barbecue|gas barbecue|pizza oven|log splitter|
water feature|heated airer|ceiling fan|paint sprayer|wallpaper steamer|tile cutter|lawn scarifier|
cultivator|battery charger|outdoor speaker|
lawn edger|pole saw|hedge cutter|log burner|air fryer|coffee machine|slow cooker|garage door opener|
pond filter|pond heater|misting fan|bug zapper|electric blanket|rotavator|wet and dry vacuum|
steam mop|heat gun|mitre saw|bench grinder|nail gun|soil tiller|doorbell camera|smart plug|
garden light kit|spotlight|uplighter|pendant light|bollard light""".replace("\n", "").split("|")
FURNITURE = """garden chair|folding chair|garden bench|bistro set|sun lounger|parasol|hammock|rattan sofa|
dining set|swing seat|picnic table|storage bench|deckchair|gazebo|shed|greenhouse|log store|
cold frame|trellis|arbour|egg chair|corner sofa|coffee table|bar stool|bookcase|wardrobe|
chest of drawers|bedside table|mirror|wall shelf|
daybed|lounge set|recliner|rocking chair|dining table|potting bench|plant stand|tool shed|summerhouse|
pergola|carport|canopy|windbreak|bike store|sandpit|playhouse|trampoline|climbing frame|sideboard|
console table|ottoman|footstool|bunk bed|headboard""".replace("\n", "").split("|")
SMALL = """garden hose|hose reel|sprinkler|watering can|water butt|compost bin|planter|raised bed|
bird feeder|bird bath|doormat|rug|cushion set|pair of curtains|storage box|wall clock|tin of paint|
tub of wood stain|can of fence paint|paint roller set|fence panel|ladder|toolbox|spade|rake|
pair of pruning shears|wheelbarrow|lantern|plant pot|seed tray|bag of compost|box of lawn feed|
pair of garden gloves|kneeler|fire pit|charcoal barbecue|barbecue cover|chimenea|outdoor rug|
bin store|set of door handles|pack of light bulbs|solar path lights|hanging basket|duvet|
set of tea towels|bathroom cabinet|shower curtain|laundry basket|draught excluder|
roll of turf|bag of gravel|pack of slabs|edging strip|pond liner|weed membrane|trowel|hoe|
loppers|leaf rake|garden fork|hand cultivator|bulb planter|soil tester|rain gauge|thermometer|
bee hotel|hedgehog house|nest box|squirrel baffle|wind chime|sundial|garden gnome|wall planter|
window box|tomato cage|cane set|netting|fleece jacket|wellies|potting mix|mulch|bark chippings|
tub of filler|tin of varnish|tin of primer|decking oil|masonry paint|paintbrush set|dust sheet|
sandpaper pack|caulk gun|tile adhesive|grout|shelf brackets|curtain pole|towel rail|bath mat|
cushion cover|throw|lampshade|photo frame|vase|candle set|door wreath|picture hook set""".replace("\n", "").split("|")
MODIFIERS = """green|black|grey|white|blue|sage|cream|terracotta|red|charcoal|navy|yellow|olive|
oak|teak|steel|aluminium|rattan|bamboo|pine|ceramic|galvanised|large|small|compact|heavy duty|
folding|stainless|copper|slate|anthracite|natural|wooden|metal|outdoor|vintage""".replace("\n", "").split("|")
BRANDS = ["Greenleaf", "Hartwell", "Brambling", "Copperfield", "Oakhurst", "Fernbrook", "Wrenway",
          "Mossgate", "Ashcombe", "Pemberton", "Thornbury", "Larkfield Home", "Willowby", "Redstart",
          "Gardenia Pro", "Hollins", "Blackthorn", "Sedgewick", "Marlowe", "Elmstead", "Birchall",
          "Quillan", "Tamsin", "Harrowgate", "Cobbold", "Norland", "Kilby", "Petherton", "Ravensworth"]
PARTS = ["blade", "cable", "battery", "handle", "wheel", "switch", "nozzle", "bracket", "hinge",
         "pull cord", "spark plug", "filter", "charger", "seat cushion", "leg", "strap", "lid",
         "grass box", "spool", "thermostat"]
FIRST = """Sam|Alex|Jo|Chris|Pat|Ruth|Helen|David|Priya|Omar|Fatima|Tom|Lucy|Megan|Gareth|Ewan|Ian|Nadia|
Sophie|Hannah|James|Olivia|Aisha|Raj|Grace|Martin|Karen|Steve|Paul|Emma|Zoe|Ben|Kate|Leah|Owen|Rhys|
Niamh|Sean|Fiona|Callum|Mohammed|Yusuf|Amira|Chloe|Jack|Harry|Ellie|Mia|Noah|Liam|Isla|Ava|Ruby|
Joan|Brian|Margaret|Derek|Sheila|Trevor|Linda|Graham|Janet|Colin|Wendy|Nigel|Sandra|Keith|Pauline|
Agnieszka|Tomasz|Marta|Ahmed|Leila|Dev|Anjali|Kwame|Ama|Chidi|Yan|Mei|Hiroshi|Lars|Ingrid|Pedro|
Lucia|Marco|Giulia|Sven|Rosa|Dylan|Carys|Morag|Angus|Bethan|Shona|Tariq|Hamza|Ewa|Abigail|Adam|
Alice|Amber|Andrew|Anna|Barry|Bernard|Carl|Carol|Charlotte|Clare|Daniel|Dawn|Debbie|Dennis|Eileen|
Elaine|Eric|Frances|Frank|Gemma|Gordon|Hazel|Heather|Hugh|Irene|Jacob|Jane|Jean|Jenny|Julie|Kevin|
Kieran|Laura|Lewis|Lorraine|Malcolm|Maureen|Michelle|Neil|Nicola|Norman|Patricia|Peter|Phil|Rachel|
Ray|Rebecca|Richard|Rob|Roger|Rosemary|Sally|Sarah|Simon|Stuart|Susan|Teresa|Tony|Valerie|Vicky|
Victor|Yvonne|Zara|Imran|Sana|Bilal|Farah|Kofi|Esi|Oluwaseun|Ngozi|Wojciech|Katarzyna|Dorota|
Bogdan|Ioana|Andrei|Elif|Mehmet|Thanh|Linh|Ravi|Sunita|Deepak|Kiran""".replace("\n", "").split("|")
LAST = """Smith|Jones|Taylor|Brown|Williams|Wilson|Evans|Thomas|Roberts|Walker|Wright|Robinson|Thompson|
White|Hughes|Edwards|Green|Hall|Wood|Harris|Lewis|Martin|Jackson|Clarke|Clark|Turner|Hill|Scott|
Cooper|Morris|Ward|Moore|King|Watson|Baker|Harrison|Morgan|Patel|Young|Allen|Mitchell|James|
Anderson|Phillips|Lee|Bell|Parker|Davis|Campbell|Kelly|Khan|Shah|Begum|Ali|Hussain|Kowalski|
Nowak|Okafor|Mensah|Chen|Wang|Singh|Kaur|Murphy|Byrne|MacLeod|Fraser|Reid|Gallagher|Fletcher|
Dixon|Hunt|Holmes|Palmer|Mills|Barnes|Knight|Lloyd|Butler|Russell|Marshall|Owen|Pearce|Fox|
Ellis|Webb|Rees|Price|Hart|Stone|Burton|Gray|Lowe|Shaw|Carter|Pritchard|Jenkins|Powell|Atkinson|
Bailey|Barker|Bennett|Booth|Bradley|Briggs|Brooks|Chambers|Chapman|Cole|Collins|Cox|Crawford|Dawson|
Day|Dean|Doyle|Duncan|Elliott|Ferguson|Fisher|Ford|Foster|Gibson|Gill|Gordon|Graham|Grant|Griffiths|
Hamilton|Hardy|Harvey|Hayes|Henderson|Hudson|Hunter|Jordan|Kennedy|Lambert|Lane|Lawrence|Lawson|
Marsh|Mason|Matthews|Miller|Moss|Murray|Newman|Nicholson|Norris|Oliver|Page|Payne|Pearson|Perry|
Porter|Read|Reynolds|Richards|Riley|Rose|Ross|Saunders|Simpson|Slater|Spencer|Stevens|Sutton|
Tucker|Wade|Wallace|Walsh|Warren|Watts|Wells|West|Wheeler|Whitehouse|Wilkinson|Woods|Yates|
Ahmed|Iqbal|Malik|Sharma|Gupta|Nguyen|Tran|Kim|Park|Yilmaz|Popescu|Wisniewski|Adeyemi|Boateng""".replace("\n", "").split("|")
TOWNS = """Ludlow|Harrogate|Kendal|Totnes|Hexham|Malton|Ripon|Bakewell|Ledbury|Frome|Stroud|Whitby|Alnwick|
Penrith|Oban|Tenby|Brecon|Ilkley|Knutsford|Skipton|Hereford|Truro|Bideford|Wells|Glastonbury|Bath|
Salisbury|Dorchester|Bridport|Lewes|Rye|Hastings|Faversham|Whitstable|Canterbury|Sevenoaks|Guildford|
Farnham|Marlow|Henley|Abingdon|Banbury|Bicester|Witney|Stamford|Oakham|Louth|Boston|Spalding|Ely|
Saffron Walden|Sudbury|Woodbridge|Aldeburgh|Cromer|Holt|Swaffham|Thetford|Buxton|Matlock|Leek|
Stafford|Lichfield|Tamworth|Rugby|Warwick|Evesham|Pershore|Tewkesbury|Cirencester|Tetbury|Chepstow|
Monmouth|Abergavenny|Aberystwyth|Bangor|Conwy|Llandudno|Keswick|Ambleside|Ulverston|Lancaster|
Clitheroe|Settle|Thirsk|Beverley|Driffield|Morpeth|Berwick|Peebles|Stirling|Perth|Dunkeld|Nairn|
Elgin|Dingwall|Portree|Enniskillen|Newry|Omagh|Alston|Appleby|Ashbourne|Axminster|Barnstaple|
Beccles|Bridgnorth|Bude|Burford|Chipping Norton|Clevedon|Crediton|Dartmouth|Devizes|Diss|Dunbar|
Easingwold|Falmouth|Fowey|Grantham|Halesworth|Hay-on-Wye|Helmsley|Honiton|Horncastle|Hunstanton|
Kelso|Keynsham|Kirkby Lonsdale|Launceston|Leominster|Liskeard|Lyme Regis|Machynlleth|Malvern|
Marlborough|Melrose|Midhurst|Minehead|Moffat|Nantwich|Newark|Oundle|Padstow|Pickering|Pitlochry|
Ross-on-Wye|Rothbury|Saltash|Sedbergh|Shaftesbury|Sherborne|Sidmouth|Southwold|Stokesley|Tavistock|
Tiverton|Uppingham|Wadebridge|Wantage|Wareham|Wetherby|Wimborne|Wirksworth|Woodstock|Yarm""".replace("\n", "").split("|")
STREETS = ["Mill", "Church", "Station", "Orchard", "Chapel", "Meadow", "Park", "Victoria", "Castle",
           "Willow", "Elm", "Beech", "Rowan", "Quarry", "Bridge", "Forge", "Kiln", "Brook", "Spring",
           "Vicarage", "Harbour", "Market", "Tannery", "Ropewalk", "Primrose", "Foxglove", "Heather",
           "Hawthorn", "Bramble", "Sycamore", "Linden", "Acorn", "Laurel", "Juniper", "Holly", "Ivy",
           "Poplar", "Cedar", "Larch", "Hazel", "Alder", "Aspen", "Cherry", "Plum", "Damson", "Mulberry",
           "Greenfield", "Highfield", "Westfield", "Kings", "Queens", "Abbey", "Manor", "Grange", "Farm"]
STREET_KINDS = ["Lane", "Road", "Street", "Close", "Way", "Avenue", "Crescent", "Gardens", "Row", "Drive"]
COURIERS = ["Swiftpost", "ParcelHop", "Kestrel Post", "Northline", "Greenway Couriers", "DPX",
            "Hartley Freight", "the Larkfield van", "Boxline", "Roadrunner Parcels"]
CARDS = ["Visa card", "Visa debit card", "Mastercard", "Amex card", "credit card", "debit card",
         "PayPal account", "Apple Pay", "Google Pay", "Maestro card", "business card", "joint account card"]
BANKS = ["Northway Bank", "Harbour Building Society", "Crestmoor Bank", "my bank", "the bank",
         "Union Savings", "Fairlight Bank"]
DOMAINS = ["mailbox.com", "postbox.co.uk", "inbox.net", "webmail.org", "fastmail.uk", "homemail.com"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
RELATIVES = ["mum", "dad", "daughter", "son", "sister", "brother", "neighbour", "partner", "wife",
             "husband", "grandson", "granddaughter", "aunt", "uncle", "friend", "father-in-law"]
SEASONS = ["spring", "summer", "autumn", "winter"]
FAULTS = ["has stopped working", "won't switch on", "makes a loud grinding noise",
          "keeps cutting out", "has a crack along the side", "is leaking", "smells of burning",
          "has rusted badly", "wobbles and feels unsafe", "has a split seam", "has peeled and faded",
          "stopped charging", "trips the fuse", "has a bent frame", "is missing a screw and rattles"]


def _product(rng, kinds):
    """A noun phrase such as 'green hose reel' or 'Hartwell strimmer' (no article)."""
    noun = rng.choice(rng.choice(kinds))
    roll = rng.random()
    if roll < 0.35:
        return f"{rng.choice(MODIFIERS)} {noun}"
    if roll < 0.55:
        return f"{rng.choice(BRANDS)} {noun}"
    return noun


FILLERS = {
    "product": lambda r: _product(r, [POWERED, FURNITURE, SMALL]),
    "product2": lambda r: _product(r, [POWERED, FURNITURE, SMALL]),
    "durable": lambda r: _product(r, [POWERED]),  # things with motors, bulbs or batteries: a guarantee
    "order": lambda r: str(r.randint(10000, 99999)),
    "order2": lambda r: str(r.randint(10000, 99999)),
    "date": lambda r: f"{r.randint(1, 28)} {r.choice(MONTHS)}",
    "date2": lambda r: f"{r.randint(1, 28)} {r.choice(MONTHS)}",
    "weekday": lambda r: r.choice(WEEKDAYS),
    "month": lambda r: r.choice(MONTHS),
    "season": lambda r: r.choice(SEASONS),
    "courier": lambda r: r.choice(COURIERS),
    "town": lambda r: r.choice(TOWNS),
    "street": lambda r: f"{r.randint(1, 120)} {r.choice(STREETS)} {r.choice(STREET_KINDS)}",
    "house": lambda r: str(r.randint(1, 80)),
    "first": lambda r: r.choice(FIRST),
    "last": lambda r: r.choice(LAST),
    "card": lambda r: r.choice(CARDS),
    "bank": lambda r: r.choice(BANKS),
    "price": lambda r: f"{r.randint(12, 640)}.{r.choice(['00', '99', '49', '95', '50'])}",
    "small": lambda r: str(r.choice([3, 4, 5, 6, 7, 8, 10, 12, 15, 20, 25])),
    "months": lambda r: str(r.randint(3, 22)),
    "days": lambda r: str(r.randint(3, 12)),
    "code": lambda r: r.choice(["GARDEN", "SPRING", "BLOOM", "WELCOME", "PATIO", "LARK"]) + str(r.randint(5, 30)),
    "email": lambda r: f"{r.choice(FIRST).lower()}.{r.choice(LAST).lower()}{r.randint(1, 99)}@{r.choice(DOMAINS)}",
    "phone": lambda r: f"07{r.randint(100, 999)} {r.randint(100000, 999999)}",
    "colour": lambda r: r.choice(MODIFIERS[:13]),
    "colour2": lambda r: r.choice(MODIFIERS[:13]),
    "part": lambda r: r.choice(PARTS),
    "fault": lambda r: r.choice(FAULTS),
    "relative": lambda r: r.choice(RELATIVES),
    "years": lambda r: r.choice(["two", "three", "five", "ten", "many", "a few"]),
}


class Facts(dict):
    """The fillers of one ticket, drawn on first use so that '{product}' means one thing per ticket."""

    def __init__(self, rng):
        super().__init__()
        self.rng = rng

    def __missing__(self, key):
        value = self[key] = FILLERS[key](self.rng)
        return value


# ---------------------------------------------------------------------------------------------
# Templates. Each team has topics; a topic has ways to state the problem and ways to ask.
# Shared words ("order", "refund", "card", "account", "broken", "delivery") are spread on purpose.
# ---------------------------------------------------------------------------------------------

TOPICS = {
    "delivery": [
        {"issue": ["My order {order} was meant to arrive on {date} and it still hasn't come.",
                   "I ordered a {product} on {date} and there is still no sign of it.",
                   "The {product} from order {order} is now {days} days late.",
                   "Tracking for order {order} has said out for delivery since {weekday}, but nothing turned up.",
                   "I'm still waiting for my {product}; the confirmation email promised it by {date}.",
                   "It has been {days} days since you took payment for the {product} and it hasn't been dispatched.",
                   "The tracking link for my {product} hasn't updated since {weekday}."],
         "ask": ["Can you tell me where it is?", "Could you chase {courier} for me?",
                 "Please let me know when it will actually arrive.", "I'd like a firm delivery date, please.",
                 "Can someone check what has happened to it?", "Is it lost, or just stuck somewhere?",
                 "Please find out where my parcel has got to."]},
        {"issue": ["{courier} says my parcel was delivered on {weekday}, but it isn't here.",
                   "The tracking page shows order {order} as delivered, yet nobody at {street} received anything.",
                   "The driver's photo shows a front door that is not mine.",
                   "I got a text saying the {product} was handed to a neighbour, but none of my neighbours has it.",
                   "Apparently the parcel was left in my safe place, but there's nothing in the shed or porch."],
         "ask": ["Please find out where they left it.", "Can you open an investigation with {courier}?",
                 "Could you send the {product} again if it can't be found?",
                 "Please ask the driver where exactly they put it.", "What happens now that it's gone missing?"]},
        {"issue": ["Only one box of order {order} arrived; the {product} is missing.",
                   "The parcel came, but the {product} I paid for was not in it.",
                   "I ordered a {product} and a {product2}, and only the {product2} has turned up.",
                   "Half of order {order} came on {weekday} and the rest has vanished from the tracking."],
         "ask": ["When will the rest be delivered?", "Is the second box on its way?",
                 "Could you check whether it was ever sent out?", "Please send the missing item."]},
        {"issue": ["I need to change the delivery address for order {order} to {street}, {town}.",
                   "I won't be home on {date} when the {product} is due.",
                   "Could the courier leave my parcel with my neighbour at number {house}?",
                   "We are away from {date} and the {product} is booked for that week.",
                   "The delivery slot you gave me for the {product} is while I'm at work."],
         "ask": ["Please rebook the delivery for {weekday} or later.",
                 "Can you update the address before it is dispatched?",
                 "Can the driver call me on {phone} before coming?", "Is a Saturday delivery possible?"]},
        {"issue": ["The tracking says my parcel was returned to sender after a failed delivery attempt.",
                   "{courier} tried to deliver while I was out and now says the parcel is going back to you.",
                   "The courier never knocked, left no card, and marked the {product} as refused.",
                   "The driver could not find {street} and took the {product} back to the depot."],
         "ask": ["I still want the {product}, so please send it out again rather than refund me.",
                 "Please arrange another delivery; I don't want my money back, I want the order.",
                 "Can you get it sent out again this week?", "Please have another go at delivering it."]},
        {"issue": ["The van driver would not carry the {product} past the gate and it's too heavy for me.",
                   "The {product} was left on the pavement in the rain outside {street}.",
                   "The courier delivered my {product} to {town} instead of my address."],
         "ask": ["Can you make sure the next delivery is a two-person one?",
                 "Please make sure this doesn't happen with the rest of my order.",
                 "Could you arrange for it to be brought to the right address?"]},
    ],
    "returns": [
        {"issue": ["I bought a {product} on {date} but it's not what I expected.",
                   "The {product} is far too big for our balcony.",
                   "I ordered two of the {product} by mistake.",
                   "My {relative} bought me the same {product}, so I don't need the one from order {order}.",
                   "The {product} looks nothing like the photos on the website.",
                   "The colour of the {product} clashes with our patio, so I've changed my mind."],
         "ask": ["How do I send it back for a refund?", "Please send me a returns label.",
                 "Can I return it and get my money back?", "I'd like to exchange it for the {colour} one.",
                 "What is the easiest way to return it?", "Can I take it back to a store instead of posting it?"]},
        {"issue": ["I ordered the {colour} version but received a {colour2} one.",
                   "The box contained a {product2} instead of the {product} I ordered.",
                   "You sent the wrong size of {product}.",
                   "Order {order} was for a {product}, but the label on the box is for someone else's order."],
         "ask": ["Could you swap it for the right one?", "Please collect it and send the correct item.",
                 "Do I need to send it back before you send the right one?",
                 "I'd like to return it for a full refund."]},
        {"issue": ["The {product} arrived with a cracked leg.", "When I opened the box the {product} was broken.",
                   "The {product} came yesterday with a big dent in it.",
                   "The {product} was scratched all over when it arrived on {weekday}.",
                   "Two of the pieces for the {product} were snapped in the box when it came."],
         "ask": ["I'd like a replacement or a refund.", "Please arrange a collection and a new one.",
                 "How do I return it?", "Please tell me how to send it back."]},
        {"issue": ["I sent the {product} back with {courier} on {date} and haven't heard anything.",
                   "I dropped the return for order {order} at the post office in {town} two weeks ago.",
                   "My return for the {product} was signed for at your warehouse on {weekday}.",
                   "I posted the {product} back using your label a fortnight ago."],
         "ask": ["Has it reached your warehouse?", "When will the return be processed?",
                 "Can you confirm you have it back?", "Please let me know the status of my return."]},
        {"issue": ["I booked a collection for the returned {product} but nobody came on {weekday}.",
                   "The return collection for order {order} was cancelled without any message.",
                   "The {product} I'm returning is too bulky to post."],
         "ask": ["Please book a new collection slot.", "Can someone collect it from {street}?",
                 "Could you arrange a pickup for the return?"]},
        {"issue": ["Can I still return a {product} bought on {date}? It's unused and still boxed.",
                   "I opened the {product} but haven't used it, and I'd rather not keep it.",
                   "The {product} was a gift and the person already has one."],
         "ask": ["What's your returns policy?", "Would I get a full refund or a credit note?",
                 "Do I pay for the return postage?", "Please tell me how returns work."]},
    ],
    "payment": [
        {"issue": ["I was charged twice for order {order}.",
                   "My {card} shows two payments of £{price} for the same {product}.",
                   "The money for the {product} left my bank account twice.",
                   "{bank} shows the same £{price} payment to Larkfield on {date} and again on {date2}."],
         "ask": ["Please refund the duplicate payment.", "Can you cancel the second charge?",
                 "Please put the extra £{price} back on my card.", "Could you check your payments system?"]},
        {"issue": ["My {card} keeps getting declined at checkout even though there's money in my account.",
                   "The payment page froze and now I don't know if I paid for the {product}.",
                   "The checkout says payment failed, but {bank} shows the money as pending.",
                   "I tried to pay with {card} and the page just went back to the basket."],
         "ask": ["Can you check whether the payment went through?", "Is there another way to pay?",
                 "Please tell me whether the order is paid or not.", "Why was the payment refused?"]},
        {"issue": ["The discount code {code} didn't apply to my order.",
                   "I had a £{small} voucher but the checkout charged me the full price for the {product}.",
                   "The {product} was on offer at £{price} but I was charged more than that.",
                   "The price dropped by £{small} the day after I paid for the {product}."],
         "ask": ["Please refund the difference to my card.", "Can you apply the code now?",
                 "Could you adjust the price and pay back the difference?"]},
        {"issue": ["You emailed on {date} to say my refund of £{price} was issued, but it hasn't reached my {card}.",
                   "The refund I got for order {order} was £{small} short.",
                   "My refund went to an old {card} that I've cancelled.",
                   "The refund confirmation came on {weekday}, but {bank} can't see any money coming in."],
         "ask": ["Can you send me a payment reference so {bank} can trace it?", "Please correct the amount.",
                 "How can the money be paid to my new card?", "Please check where the refund money went."]},
        {"issue": ["I need a VAT invoice for order {order} for my business.",
                   "The receipt for my {product} shows the wrong billing address.",
                   "My invoice lists a {product2} I never bought."],
         "ask": ["Could you email me a proper invoice?", "Please send a corrected receipt.",
                 "Please reissue the invoice with my company name."]},
        {"issue": ["I paid partly with a gift card and partly with my {card}, but the gift card balance wasn't used.",
                   "I was charged £{small} for delivery although the order was over the free delivery limit.",
                   "I chose to pay in three instalments but the full £{price} was taken at once.",
                   "I was charged in euros instead of pounds for the {product}."],
         "ask": ["Please put the balance back on the gift card.", "Please refund the delivery charge.",
                 "Can you fix the payment plan?", "Please sort out the charge."]},
    ],
    "warranty": [
        {"issue": ["My {durable}, bought {months} months ago, has stopped working.",
                   "The motor on my {durable} cut out after {months} months of light use.",
                   "The {durable} I bought last {season} won't switch on any more.",
                   "After about {months} months the {durable} {fault}.",
                   "My {durable} {fault}, and it's only a year old."],
         "ask": ["Is this covered by the guarantee?", "Can you arrange a repair under warranty?",
                 "What do I need to send to make a warranty claim?", "Will you repair or replace it?",
                 "I believe it's still under guarantee, so what happens now?"]},
        {"issue": ["The {part} of the {durable} snapped after a year.",
                   "The frame of our {durable} has rusted through in {months} months, which seems far too soon.",
                   "The {part} on my {durable} has worn out although it's still within the guarantee period.",
                   "A {part} fell off the {durable} last {season}."],
         "ask": ["Can I get a replacement part?", "Could you send a spare {part} under the guarantee?",
                 "Is a new {part} covered by the warranty?"]},
        {"issue": ["I sent my {durable} away for repair on {date} and have heard nothing since.",
                   "The repair centre collected my {durable} {days} weeks ago.",
                   "The engineer who came about my {durable} said he'd order a {part}, but nobody came back."],
         "ask": ["When will I get it back?", "Could you chase the repair?",
                 "Please give me an update on the repair."]},
        {"issue": ["I've lost the guarantee card for my {durable}.",
                   "I can't find the two-year warranty paperwork for the {durable}.",
                   "I bought the {durable} as a gift, so the warranty is in my name, not my {relative}'s."],
         "ask": ["Is the warranty still valid with just the order number {order}?",
                 "Can you look up my guarantee?", "Can the guarantee be moved to my {relative}'s name?"]},
        {"issue": ["This is the second {durable} that has failed; the first was replaced under warranty in {month}.",
                   "The {durable} was repaired under guarantee in {month} and the same fault is back.",
                   "The {durable} sparks when I plug it in.",
                   "The battery of the {durable} no longer holds a charge after {months} months."],
         "ask": ["I'd like a refund instead of yet another repair.", "Is this covered by your warranty?",
                 "Please tell me how to claim under the guarantee.", "What are my options under the warranty?"]},
    ],
    "account": [
        {"issue": ["I can't log in to my Larkfield account.",
                   "The password reset email never arrives.",
                   "It says my password is wrong although I changed it on {weekday}.",
                   "My account has been locked after too many attempts to sign in.",
                   "The website keeps logging me out whenever I open my order history."],
         "ask": ["Please reset my password.", "Can you unlock my account?",
                 "Could you send the reset link again?", "How do I get back into my account?"]},
        {"issue": ["I want to change the email address on my account to {email}.",
                   "I've moved to {town} and need to update the saved address on my profile.",
                   "My name is spelt wrong on my account, it should be {first} {last}.",
                   "I've changed my phone number to {phone}."],
         "ask": ["Please update my details.", "How do I change this myself?",
                 "Can you update my profile for me?"]},
        {"issue": ["Please delete my account and all my personal data.",
                   "I'd like a copy of the personal data you hold about me.",
                   "I no longer shop with you and want my account closed."],
         "ask": ["Please confirm once it's done.", "How long will that take?",
                 "Please close the account completely."]},
        {"issue": ["I keep getting marketing emails although I unsubscribed.",
                   "Your newsletter is going to {email}, an address I never gave you.",
                   "I get three text messages a week about offers."],
         "ask": ["Please take me off the mailing list.", "Please stop the messages.",
                 "Can you change my marketing settings?"]},
        {"issue": ["My Larkfield rewards points from order {order} never showed up.",
                   "My loyalty card number isn't linked to my account.",
                   "All my reward points disappeared from my account on {date}."],
         "ask": ["Can you add the missing points?", "Please link the card to my account.",
                 "Can the points be put back?"]},
        {"issue": ["My past orders have vanished from my account page.",
                   "I seem to have two accounts, one under {email}.",
                   "I want to remove the old {card} saved in my account.",
                   "Someone else's address appears in my saved addresses."],
         "ask": ["Can you merge them?", "How do I delete the saved card?",
                 "Please fix my account.", "Can you check my account settings?"]},
    ],
}

GREETINGS = ["Hi,", "Hello,", "Hello team,", "Hi there,", "Dear Larkfield,", "Good morning,",
             "Good afternoon,", "Dear customer services,", "Hiya,", "To whom it may concern,",
             "Hi Larkfield team,", "Morning,", "Hello, {first} here.", "Dear Sir or Madam,", "Evening,"]
CONTEXTS = ["I ordered from you on {date}.", "My order number is {order}.",
            "I'm a regular customer from {town}.", "This is about order {order}.",
            "I placed an order online on {weekday}.", "I'm writing about my recent order.",
            "I've shopped with Larkfield for {years} years.", "Order reference {order}.",
            "I ordered a {product} last month.", "My name is {first} {last} and I live in {town}."]
DETAILS = ["I've attached a photo.", "My phone number is {phone} if that's easier.",
           "I live at {street}, {town}.", "I'm free most afternoons.",
           "It was meant to be a present for my {relative}.", "The order was placed under {email}.",
           "I've already tried the help pages.", "I called on {weekday} but couldn't get through.",
           "This is the first time I've had a problem with you.", "It's quite urgent.",
           "I'd prefer an email reply.", "My {relative} placed the order for me.",
           "I'm not very good with computers.", "Your chat service was closed when I tried it."]
FEELINGS = ["This is really frustrating.", "I'd appreciate a quick answer.", "I'm rather disappointed, to be honest.",
            "Sorry to bother you with this.", "I hope this can be sorted quickly.",
            "I've been patient but it's getting silly now.", "Not the experience I expected from you.",
            "I'm sure it's just a mix-up.", "Any help would be great.", "I'd rather not have to chase this again."]
CLOSINGS = ["Thanks, {first}", "Thank you, {first} {last}", "Kind regards, {first} {last}",
            "Many thanks.", "Cheers, {first}", "Best wishes, {first}", "Regards, {last}",
            "Thanks in advance.", "Hope you can help.", "Looking forward to hearing from you.",
            "{first}", "Thanks.", "Best, {first} {last}", "Thank you.", "Yours, {first}"]
# Background sentences for long tickets; some mention other teams' words in a harmless way.
BACKGROUND = [
    "We've been doing up the garden since {season} and this was the last piece.",
    "My {relative} recommended Larkfield after buying a {product2} from you.",
    "We're having a party on {date} and wanted everything ready by then.",
    "I also bought a {product2}, which is fine.", "The weather here in {town} has been awful.",
    "I work shifts, so I'm not always around during the day.",
    "The garden is quite small, so space matters.", "I compared a few shops before choosing yours.",
    "My {relative} helped me put the order together online.",
    "Your staff in the {town} store were very helpful when I asked about it.",
    "I read the reviews first and they were mostly good.",
    "The instructions were a bit confusing but we got there.",
    "It's for the patio we laid last {season}.", "I'm not one to complain normally.",
    "We have two dogs, so the garden gets a lot of wear.", "The order total was about £{price}.",
    "I kept the box and all the packaging.", "The house number is on the gate and clearly visible.",
    "We moved into the house in {month} and are still sorting things out.",
    "My neighbour has the same {durable} and loves it.", "I tried phoning on {weekday} as well.",
    "I chose Larkfield because of the good reviews of your customer service.",
    "I don't use social media, so email is best.", "My email is {email} in case you need it.",
    "I've been a customer since you opened the {town} branch.",
]

# Harmless mentions of each team's subject, put into long tickets of the *other* teams.
ASIDES = {
    "delivery": ["Your courier is usually brilliant, so no complaints there.",
                 "The last parcel from you came a day early.",
                 "I know deliveries are busy at this time of year.",
                 "{courier} brought my last order and the driver was lovely.",
                 "Last time the delivery was quick, which is why I ordered again."],
    "returns": ["Last year I returned a {product2} and the refund came quickly.",
                "I've sent things back to you before without any fuss.",
                "I know your returns policy gives me 30 days.",
                "I've always found your returns easy in the past, so this is a surprise.",
                "I kept the receipt in case I ever needed to return anything."],
    "payment": ["I paid with my {card} as usual.", "The payment went through without any problem.",
                "I had a £{small} voucher which came off nicely.",
                "The invoice arrived by email straight away.",
                "I wasn't charged for delivery, which was nice."],
    "warranty": ["My old {durable} was repaired under guarantee years ago.",
                 "The guarantee on my old {durable} ran out long ago, which is why I bought a new one.",
                 "I registered the warranty online the day it came.",
                 "Your repair service fixed my {relative}'s {durable} last year.",
                 "Everything else I've bought from you has outlasted its warranty."],
    "account": ["I've had an account with you for {years} years.",
                "I logged in to my account to check the order.",
                "I changed my password last month, so that's all fine.",
                "My loyalty points came through as normal.",
                "My account details are all up to date."],
}

# How long tickets tell an old, settled problem (of another team) in passing.
HISTORY = ["Back in {{month}}, {old} You sorted that out quickly, thank you.",
           "This isn't the first hiccup: last {{season}} {old} That one was resolved.",
           "A while ago {old} Your team fixed it, so that's history.",
           "Previously {old} That was dealt with."]

# What the other teams' topics sound like, for negation: "this is not <phrase>".
NEGATABLE = {
    "delivery": ["a delivery problem", "about the delivery", "a question about the parcel or the courier",
                 "a late parcel", "about tracking my parcel", "a complaint about {courier}"],
    "returns": ["a refund request", "a request to send it back", "about a returns label",
                "an exchange or a return", "a return", "about sending the {product} back"],
    "payment": ["a payment problem", "about the charge on my {card}", "a billing question",
                "about being charged twice", "about an invoice", "a card payment issue"],
    "warranty": ["a warranty claim", "a repair request", "a fault with the {product}",
                 "a guarantee question", "about a faulty part", "a repair under guarantee"],
    "account": ["a login problem", "about my password", "an account issue",
                "about changing my account details", "about signing in", "an account or password question"],
}
# What each team is asked to do, in a few words, for negation tickets.
WANTS = {
    "delivery": ["I only want to know where the parcel is", "I just need the {product} delivered",
                 "all I need is a new delivery date", "I just want the courier to bring it"],
    "returns": ["I simply want to send the {product} back", "I just want to return it for my money",
                "all I need is a returns label", "I only want to swap it for another colour"],
    "payment": ["I only want the double charge on my {card} sorted", "I just need a proper invoice",
                "all I need is the extra payment refunded to my card", "I just want the discount applied"],
    "warranty": ["I just want the {durable} repaired under its guarantee",
                 "all I need is a spare {part} under the warranty", "I only want to claim on the guarantee",
                 "I just want the faulty {durable} fixed"],
    "account": ["I just need to get back into my account", "all I want is a password reset",
                "I only want my email address changed", "I just want my account closed"],
}
NEGATIONS = [
    "This is not {neg}; {want}.", "I'm not asking for {neg_bare}, {want}.",
    "Please don't treat this as {neg}. {Want}.", "To be clear, this isn't {neg}: {want}.",
    "It is not {neg}, {want}.", "Nothing here is {neg}; {want}.",
    "{Want}. This is definitely not {neg}.", "{Want}, so this isn't {neg}.",
]
# Cue phrases that serve both as the real subject ({x}) and as the denied one ({y}), so that a
# model blind to word order sees the same words whichever team the ticket belongs to.
CUES = {
    "delivery": ["the delivery", "my parcel", "the courier", "the tracking", "a late delivery",
                 "a missing parcel", "the delivery date"],
    "returns": ["a refund", "a return", "a returns label", "an exchange", "my money back",
                "sending the item back", "the return"],
    "payment": ["the payment", "the charge on my card", "a billing problem", "a double charge",
                "the invoice", "a declined card", "the price I paid"],
    "warranty": ["a repair", "the warranty", "the guarantee", "a faulty part", "a warranty claim",
                 "a repair under guarantee", "the fault"],
    "account": ["my password", "my account", "signing in", "my login", "my account details",
                "a password reset", "my profile"],
}
SYMMETRIC = [
    "This isn't about {y}, it's about {x}.", "I'm not asking about {y}; I need help with {x}.",
    "My question is about {x}, not {y}.", "Nothing is wrong with {y}. What I need sorted is {x}.",
    "I don't need {y}. I need help with {x}.", "Please ignore {y}; this message is about {x}.",
    "It's {x} I'm writing about, not {y}.", "Not {y} - {x}, please.",
    "I'm not worried about {y} at all; it's {x} that needs looking at.",
]
SHORT = {
    "delivery": ["parcel still missing, order {order}", "where is my {product}?", "order {order} not arrived yet",
                 "tracking stuck since {weekday}", "courier left my parcel at the wrong house",
                 "need to change delivery address", "{product} delivery late again",
                 "driver never came, order {order}", "parcel marked delivered but not here",
                 "half my order missing", "any news on my {product}?", "still waiting for order {order}", "order {order} - where is it??", "box never came", "nothing delivered yet, order {order}", "courier says delivered, it isn't", "{product} not here yet, paid on {date}", "no sign of my order", "{courier} lost my order?", "is order {order} on its way?"],
    "returns": ["want to return my {product}", "need a returns label please", "how do I send back the {product}?",
                "wrong colour sent, want an exchange", "{product} arrived broken, want a refund",
                "return for order {order} - any news?", "collection for my return never came",
                "changed my mind about the {product}", "can I return an opened {product}?",
                "sent the {product} back, did you get it?", "send back {product} please", "don't want the {product} any more", "exchange please, wrong size", "{product} not as pictured, money back?", "wrong item in order {order}", "can I swap the {product}?", "{product} came broken, what now"],
    "payment": ["charged twice for order {order}", "card declined at checkout", "discount code {code} not working",
                "need VAT invoice for order {order}", "refund issued but not on my card",
                "paid but order says unpaid", "why was I charged £{price}?", "gift card balance not used",
                "double payment on my {card}", "charged for delivery, should be free", "charged wrong amount for order {order}", "money taken twice", "refund not in my bank yet", "card keeps failing", "paid twice??", "order {order} invoice please", "voucher not taken off", "why two payments on my account?"],
    "warranty": ["{durable} stopped working after {months} months", "is my {durable} still under guarantee?",
                 "warranty claim for my {durable}", "{durable} motor dead, bought last year",
                 "spare {part} needed under warranty", "repair update? sent my {durable} on {date}",
                 "{durable} broken after a year, covered?", "lost my guarantee card", "{durable} broke after {months} months", "repair please, {durable} dead", "{durable} faulty again", "{durable} {fault}, bought in {month} last year", "guarantee on {durable}?", "fix or replace my {durable}?"],
    "account": ["cant log in", "password reset email not arriving", "please delete my account",
                "change my email to {email}", "unsubscribe me please", "missing loyalty points, order {order}",
                "account locked", "two accounts, please merge", "cannot sign in since {weekday}",
                "remove my saved card please", "update my address on my account", "can't get into my account", "login not working", "my loyalty card isn't linked to my account", "stop sending me emails", "reset link broken", "wrong name on my account", "order history gone from my account", "forgot my password"],
}
TWO_TOPIC_FORMS = [
    # {a}: the matter to act on, {b}: the one only mentioned; {ask} asks about {a}
    "{b} That part is sorted now, so please ignore it. {a} {ask}",
    "{a} {ask} Separately, {b_low} No need to do anything about that, I've dealt with it.",
    "Two things. First, {a_low} Second, {b_low} Only the first one needs your help; the second has sorted itself out.",
    "Two things. First, {b_low} Second, {a_low} Please deal with the second one; the first was just so you know.",
    "Just so you know, {b_low} No action needed there. The real reason I'm writing: {a_low} {ask}",
    "{a} Also, {b_low} That second bit is fine, I'm only telling you. {ask}",
    "I had two problems. {b} That's been resolved. {a} This one still needs fixing.",
]

# The boundary rules (the data card states them in words).
BOUNDARY = {
    # Rule 1: a damaged or faulty item within 30 days of delivery is a return; from day 31 on, warranty.
    "damage_30_days": {
        "returns": ["The {durable} was delivered {recent} and it already {fault}.",
                    "We got the {durable} {recent}; it {fault}.",
                    "I've had the {durable} since {recent}, and now it {fault}."],
        "warranty": ["The {durable} was delivered {old} and it {fault}.",
                     "We got the {durable} {old}; it {fault}.",
                     "I've had the {durable} since {old}, and now it {fault}."],
        "ask": ["What should I do?", "Can you help?", "Please tell me what happens next.",
                "I'd like this sorted.", "What are my options?"],
    },
    # Rule 2: money taken twice or a wrong amount is payment, even if the account or delivery is mentioned.
    "double_charge": {
        "payment": ["I logged into my account and saw that order {order} was paid twice.",
                    "My account page shows one order, but {bank} shows two payments of £{price}.",
                    "The delivery came fine, but I was charged for it twice.",
                    "My account says the order was cancelled, yet the £{price} was still taken from my {card}.",
                    "When I checked my account history, the {product} had been charged at £{price} instead of the price shown."],
        "ask": ["Please look into my account.", "Can you check this?", "Please sort it out.",
                "What has gone wrong with my account?"],
    },
    # Rule 3: goods that never reached the customer are delivery; goods that arrived damaged are returns.
    "arrived_or_not": {
        "delivery": ["{courier} lost the parcel with my {product} somewhere between the depot and my house.",
                     "The box from {courier} arrived, but the {product} was not inside it.",
                     "{courier} says the parcel with my {product} was damaged in their depot and never sent on.",
                     "The {product} never reached me; {courier} says it was sent back damaged."],
        "returns": ["{courier} dropped the parcel over the gate and the {product} inside is smashed.",
                    "The box from {courier} arrived crushed and the {product} inside is broken.",
                    "{courier} delivered the {product} today, but it was damaged on the way.",
                    "The {product} reached me but the courier had clearly thrown it; it's cracked."],
        "ask": ["The courier is to blame, not me. What now?", "Please sort this out with the courier.",
                "What will you do about it?", "I'm really disappointed with the courier."],
    },
    # Rule 4: a refund for a return not yet confirmed is returns; a confirmed refund that went wrong is payment.
    "refund_confirmed": {
        "returns": ["I sent the {product} back on {date} and you haven't confirmed receiving it yet.",
                    "The returned {product} was posted on {date}, but I've had no email to say it arrived.",
                    "I returned the {product} on {date}; the tracking says your warehouse got it, but nothing since."],
        "payment": ["I sent the {product} back on {date} and your email says the refund was issued {days} days later.",
                    "The returned {product} was confirmed as received and refunded on {weekday}, but {bank} shows nothing.",
                    "I got your refund confirmation for the returned {product} on {weekday}, but the amount was wrong."],
        "ask": ["When will I see my refund?", "Where is my money?", "Please sort out my refund.",
                "How long does the refund take?"],
    },
    # Rule 5: trouble signing in is account even at checkout; a refused card is payment.
    "checkout_sign_in": {
        "account": ["I was paying for a {product} when the site logged me out and won't take my password.",
                    "At checkout it asked me to sign in again and the reset link doesn't work.",
                    "My account got locked after the security check while I was paying for the {product}.",
                    "I can't get past the sign-in step at checkout, so I can't pay for my {product}."],
        "payment": ["I was paying for a {product} when my {card} was declined.",
                    "At checkout the bank's security check failed and the payment was refused.",
                    "My {card} payment was rejected at checkout with no explanation.",
                    "I'm signed in fine, but checkout refuses my {card} every time I pay for the {product}."],
        "ask": ["I still want to buy it.", "How can I complete the order?", "Can you help me pay?",
                "The basket is still waiting."],
    },
}
BOUNDARY_RULES = {team: [name for name, rule in BOUNDARY.items() if team in rule] for team in TEAMS}

# Misspellings people really make, used by the typos style before random letter slips.
MISSPELL = {"receive": "recieve", "received": "recieved", "address": "adress", "guarantee": "garantee",
            "warranty": "warrenty", "definitely": "definately", "paid": "payed", "password": "pasword",
            "account": "acount", "delivery": "delivary", "separate": "seperate", "which": "wich",
            "until": "untill", "tomorrow": "tommorow", "refund": "refnud", "parcel": "parcle",
            "courier": "currier", "because": "becuase", "really": "realy", "arrived": "arived",
            "payment": "paymant", "broken": "broke", "please": "pls", "thanks": "thx",
            "whether": "wether", "business": "buisness", "necessary": "neccessary", "there": "their",
            "invoice": "invoise", "replacement": "replacment", "collection": "colection",
            "yesterday": "yesturday", "weird": "wierd", "sign": "sing", "tracking": "traking"}
SLIP_SHARE = {3: 0.35, 4: 0.8, 5: 0.8, 6: 1.0}  # by word length (6 = six or more letters)
NEIGHBOURS = dict(zip("qwertyuiopasdfghjklzxcvbnm", "wqrtyuiopoasdfghjklkzxcvbn"))

# ---------------------------------------------------------------------------------------------
# Writing one ticket
# ---------------------------------------------------------------------------------------------


_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[^\w\s]")  # ticketnet.tokenize's pattern (a test checks)


def count_tokens(text):
    """The number of tokens ticketnet.tokenize makes of text (words and punctuation marks)."""
    return len(_TOKEN.findall(text.lower()))


def low(template):
    """Lower-case the first letter of a sentence that is being joined into another one."""
    if template[:1] == "{" or template.startswith(("I ", "I'")) or template[1:2].isupper():
        return template
    return template[0].lower() + template[1:]


def up(template):
    return template[:1].upper() + template[1:]


def frame(rng, body, greet=0.8, context=0.55, close=0.85):
    """Wrap the body sentences in an optional greeting, context line and closing."""
    parts = []
    if rng.random() < greet:
        parts.append(rng.choice(GREETINGS))
    if rng.random() < context:
        parts += rng.sample(CONTEXTS, 1 if rng.random() < 0.75 else 2)
    parts += body
    if rng.random() < close:
        parts.append(rng.choice(CLOSINGS))
    return parts


def plain_body(rng, team, details=(0, 2), second=0.5):
    """The problem, sometimes a second sentence about it, some details and a request."""
    topic = rng.choice(TOPICS[team])
    body = [rng.choice(topic["issue"])]
    if rng.random() < second:
        body.append(rng.choice([t for t in topic["issue"] if t != body[0]]))
    body += rng.sample(DETAILS, rng.randint(*details))
    if rng.random() < 0.5:
        body.append(rng.choice(FEELINGS))
    body.append(rng.choice(topic["ask"]))
    return body


def write_plain(rng, team, facts):
    return frame(rng, plain_body(rng, team))


def write_short(rng, team, facts):
    return [rng.choice(SHORT[team])]  # some get typed in a hurry too, in make_ticket


def write_long(rng, team, facts):
    """A plain ticket inside a story that mentions other teams' subjects in passing.

    The length is drawn first: about 7% of long tickets run past the 120-token table, and
    then the request at the end is what truncation cuts off."""
    over = rng.random() < 0.07
    for _ in range(200):
        body = plain_body(rng, team, details=(1, 3), second=0.2)
        asides = [rng.choice(ASIDES[t]) for t in rng.sample(TEAMS, rng.randint(1, 3))]
        story = asides + rng.sample(BACKGROUND, rng.randint(1, 4))
        if rng.random() < 0.45:  # an old problem of another team, told in the same words as a live one
            old = rng.choice(rng.choice(TOPICS[rng.choice([t for t in TEAMS if t != team])])["issue"])
            story.append(rng.choice(HISTORY).format(old=low(old)))
        rng.shuffle(story)
        cut = rng.randint(0, len(story))
        # the problem is usually stated early, sometimes only after the story; the ask ends it
        parts = frame(rng, story[:cut] + body[:-1] + story[cut:] + body[-1:], greet=0.9, context=0.8, close=0.95)
        length = count_tokens(" ".join(parts).format_map(facts))
        if (length > 120 if over else 80 <= length <= 120):
            return parts
    raise RuntimeError("no long ticket of the wanted length")


def write_typos(rng, team, facts):
    return frame(rng, plain_body(rng, team, details=(0, 1), second=0.0))  # the letters are mangled after filling, in make_ticket


def write_negation(rng, team, facts):
    """The ticket names another team's subject only to deny it."""
    other = rng.choice([t for t in TEAMS if t != team])
    kind = rng.random()
    if kind < 0.5:  # "this is not a refund request, I only want to know where the parcel is"
        neg, want = rng.choice(NEGATABLE[other]), rng.choice(WANTS[team])
        bare = neg[6:] if neg.startswith("about ") else neg
        body = [rng.choice(NEGATIONS).format(neg=neg, neg_bare=bare, want=want, Want=up(want))]
    else:  # the same cue phrases either way round; only the order tells them apart
        body = [rng.choice(SYMMETRIC).format(x=rng.choice(CUES[team]), y=rng.choice(CUES[other]))]
        if kind < 0.85:  # plus the problem itself, in words of the ticket's own team
            issue = rng.choice(rng.choice(TOPICS[team])["issue"])
            body.insert(rng.randint(0, 1), issue)
    if rng.random() < 0.6:  # neutral lines so that the ticket is not just the negation
        body.insert(0, rng.choice(CONTEXTS[:8]))
    body += rng.sample(DETAILS + FEELINGS, rng.choice([0, 1, 1, 2, 2]))
    return frame(rng, body, context=0.4)


def write_two_topics(rng, team, facts):
    other = rng.choice([t for t in TEAMS if t != team])
    a_topic, b_topic = rng.choice(TOPICS[team]), rng.choice(TOPICS[other])
    a, b = rng.choice(a_topic["issue"]), rng.choice(b_topic["issue"])
    form = rng.choice(TWO_TOPIC_FORMS)
    ask = rng.choice(a_topic["ask"])
    text = form.format(a=a, b=b, a_low=low(a), b_low=low(b), ask=ask)
    if "{ask}" not in form and rng.random() < 0.75:
        text += " " + ask
    return frame(rng, [text], context=0.4)


def _ago(rng, recent):
    """A time since delivery: within 30 days if recent, else 31 days or more."""
    if recent:
        return rng.choice([f"{rng.randint(2, 30)} days ago", f"{rng.randint(1, 4)} weeks ago",
                           "last week", "yesterday", "on " + rng.choice(WEEKDAYS), "a fortnight ago",
                           f"{rng.randint(2, 29)} days ago"])
    return rng.choice([f"{rng.randint(31, 90)} days ago", f"{rng.randint(5, 12)} weeks ago",
                       f"{rng.randint(2, 18)} months ago", "last year", "last " + rng.choice(SEASONS),
                       f"{rng.randint(40, 80)} days ago"])


def write_boundary(rng, team, facts):
    rule = BOUNDARY[rng.choice(BOUNDARY_RULES[team])]
    sentence = rng.choice(rule[team])
    if "{recent}" in sentence or "{old}" in sentence:
        sentence = sentence.replace("{recent}", _ago(rng, True)).replace("{old}", _ago(rng, False))
    body = [sentence]
    body += rng.sample(DETAILS + FEELINGS, rng.choice([0, 1, 1, 2, 2]))
    body.append(rng.choice(rule["ask"]))
    return frame(rng, body, context=0.7)


WRITERS = {"plain": write_plain, "short": write_short, "long": write_long, "typos": write_typos,
           "negation": write_negation, "two_topics": write_two_topics, "boundary": write_boundary}


def misspell(rng, text):
    """Realistic slips: known misspellings, missing apostrophes, dropped, swapped, doubled letters."""
    words = text.split(" ")
    rate = rng.uniform(0.5, 0.8)
    out = []
    for word in words:
        core = word.strip(".,?!:;")
        tail = word[len(core):]
        if core.lower() in MISSPELL and rng.random() < 0.4:
            core = MISSPELL[core.lower()]
        if "'" in core and rng.random() < 0.7:
            core = core.replace("'", "")
        # long words are the ones people get wrong, and they carry most of the meaning
        elif len(core) > 2 and core.isalpha() and rng.random() < rate * SLIP_SHARE[min(len(core), 6)]:
            i = rng.randrange(1, len(core) - 1)
            kind = rng.choice(["drop", "swap", "double", "near"])
            if kind == "drop":
                core = core[:i] + core[i + 1:]
            elif kind == "swap":
                core = core[:i] + core[i + 1] + core[i] + core[i + 2:]
            elif kind == "double":
                core = core[:i] + core[i] + core[i:]
            else:
                core = core[:i] + NEIGHBOURS.get(core[i], core[i]) + core[i + 1:]
        out.append(core + tail)
    text = " ".join(out)
    if rng.random() < 0.4:  # typed in a hurry on a phone: all lower case
        text = text.lower()
    return text


def make_ticket(rng, team, style):
    facts = Facts(rng)
    text = " ".join(WRITERS[style](rng, team, facts)).format_map(facts)
    if style == "typos" or (style == "short" and rng.random() < 0.3):
        text = misspell(rng, text)
    return text


# ---------------------------------------------------------------------------------------------
# The splits
# ---------------------------------------------------------------------------------------------


def style_counts(size):
    """Rows per style for a split of `size`: PLAIN_SHARE plain, the rest shared equally."""
    others = len(STYLES) - 1
    rest = size - round(size * PLAIN_SHARE)
    counts = {style: rest // others for style in STYLES[1:]}
    counts["plain"] = size - sum(counts.values())
    return {style: counts[style] for style in STYLES}


def build(seed=SEED):
    """All three splits: {split: [row dict with ticket_id, text, team, style, true_team]}."""
    rng = random.Random(seed)
    seen = set()
    total = sum(SIZES.values())
    ids = rng.sample(range(1, 1_000_000), total)  # random ids so that nothing leaks the split
    splits = {}
    for split, size in SIZES.items():
        rows = []
        for style, count in style_counts(size).items():
            start = rng.randrange(len(TEAMS))  # teams in turn: balanced within every style
            for k in range(count):
                team = TEAMS[(start + k) % len(TEAMS)]
                for _ in range(1000):
                    text = make_ticket(rng, team, style)
                    if text not in seen:
                        break
                else:
                    raise RuntimeError(f"could not write a new {style} ticket for {team}")
                seen.add(text)
                rows.append({"text": text, "team": team, "style": style, "true_team": team})
        rng.shuffle(rows)
        for row in rng.sample(rows, round(size * NOISE_RATE)):  # label noise
            row["team"] = rng.choice([t for t in TEAMS if t != row["true_team"]])
        for row in rows:
            row["ticket_id"] = f"LF-{ids.pop():06d}"
        splits[split] = rows
    return splits


def render(splits):
    """The bytes of every file: {name: bytes}."""
    files = {}
    for split, rows in splits.items():
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["ticket_id", "text", "team", "style"])
        for row in rows:
            writer.writerow([row["ticket_id"], row["text"], row["team"], row["style"]])
        files[f"{split}.csv"] = buffer.getvalue().encode("utf-8")
    files["SHA256SUMS"] = "".join(f"{hashlib.sha256(data).hexdigest()}  {name}\n"
                                  for name, data in files.items()).encode()
    return files


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=HERE, help="folder to write into (default: data/)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if the files in --out differ from a fresh build")
    args = parser.parse_args(argv)
    files = render(build())
    if args.check:
        stale = [name for name, data in files.items()
                 if not (args.out / name).is_file() or (args.out / name).read_bytes() != data]
        if stale:
            print(f"differ from a fresh build: {', '.join(stale)} (run python data/generate.py)")
            return 1
        print("all files match a fresh build")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (args.out / name).write_bytes(data)
    print(f"wrote {', '.join(files)} to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
