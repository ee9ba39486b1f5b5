# Regenerates clean.json: random texts of whitespace, HTML entities and numeric references, and
# what Wan's whitespace_clean(basic_clean(text)) (wan/modules/tokenizers.py) makes of them without
# ftfy.fix_text (Python 3.11 html.unescape, the regex module's \s). Run: python3 gen_clean.py > clean.json
import random, json, html, regex as re
def basic_clean(text):
    text = html.unescape(html.unescape(text))
    return text.strip()
def whitespace_clean(text):
    text = re.sub(r'\s+', ' ', text)
    return text.strip()
import sys; random.seed(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
parts = ["a", "b", "猫", " ", "  ", "\t", "\n", "\r\n", "\x1c", "\x1f", "\x85", "\xa0", "\u3000", "\u2028", "\u200b", "\ufeff",
         "&amp;", "&lt;", "&gt;", "&amp;lt;", "&#0;", "&#x80;", "&#x9f;", "&#128512;", "&#xD800;", "&#x110000;", "&copy", "&copy;", "&notit;", "&amp", "&nbsp;", "&#32;", "&#9;", "&", "&#", "&#x;", ";", "&AMP;", "&Amp;", "&frac12;", "&lt", "&#65", "&#x41"]
cases = []
for i in range(int(sys.argv[2]) if len(sys.argv) > 2 else 400):
    t = "".join(random.choice(parts) for _ in range(random.randint(0, 12)))
    cases.append({"in": t, "out": whitespace_clean(basic_clean(t))})
print(json.dumps(cases, ensure_ascii=False))
