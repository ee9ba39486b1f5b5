#!/usr/bin/env python3
"""Generates pretok.json: the expected word splits of each pre-tokenizer.

Each pre-tokenizer is the list of expressions llama.cpp's llm_tokenizer_bpe
applies in turn (src/llama-vocab.cpp); each expression splits every current
piece into its matches and the unmatched text between them. Python's
`regex` module supports \\p{..} classes and lookahead, so the expressions
run here unchanged (ECMAScript's "$" is written \\Z). Run from this folder:

    python3 gen_pretok.py > pretok.json
"""
import json
import random
import regex

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
QWEN2 = LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")
QWEN35 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"


def ranges(spec):
    out = ""
    for part in spec.split():
        a, _, b = part.partition("-")
        b = b or a
        out += regex.escape(chr(int(a, 16))) + "-" + regex.escape(chr(int(b, 16)))
    return out


CASED = ranges("""41-5A 61-7A B5 C0-D6 D8-F6 F8-1BA 1BC-1BF 1C4-293 295-2AF 370-373 376-377 37B-37D 37F 386
388-38A 38C 38E-3A1 3A3-3F5 3F7-481 48A-52F 531-556 10A0-10C5 13A0-13F5 13F8-13FD 1C90-1CBA 1CBD-1CBF
1D00-1D2B 1D6B-1D77 1D79-1D9A 1E00-1F15 1F18-1F1D 1F20-1F45 1F48-1F4D 1F50-1F57 1F59 1F5B 1F5D 1F5F-1F7D
1F80-1FB4 1FB6-1FBC 1FBE 1FC2-1FC4 1FC6-1FCC 1FD0-1FD3 1FD6-1FDB 1FE0-1FEC 1FF2-1FF4 1FF6-1FFC 2102 2107
210A-2113 2115 2119-211D 2124 2126 2128 212A-212D 212F-2134 2139 213C-213F 2145-2149 214E 2183-2184
2C00-2C7B 2C7E-2CE4 2CEB-2CEE 2CF2-2CF3 A640-A66D A680-A69B A722-A76F A771-A787 A78B-A78E AB70-ABBF
FB00-FB06 FB13-FB17 FF21-FF3A FF41-FF5A 10400-1044F 104B0-104D3 104D8-104FB 10C80-10CB2 10CC0-10CF2
118A0-118DF 1E900-1E943""")

PRE = {
    "gpt-2": [GPT2],
    "llama3": [LLAMA3],
    "qwen2": [QWEN2],
    "qwen35": [QWEN35],
    "falcon": [r"[\p{P}\$\+<=>\^~\|`]+", GPT2, r"[0-9][0-9][0-9]"],
    "starcoder": [r"\p{N}", GPT2],
    "default": [r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", r"[0-9][0-9][0-9]"],
    "deepseek-llm": [r"[\r\n]", r"\s?[" + CASED + r"]+", r"\s?[" + ranges("21-2F 3A-7E FF01-FF0F FF1A-FF5E 2018-201F 3000-3002") + "]+",
                     r"\s+\Z", "[" + ranges("4E00-9FA5 800-4E00 AC00-D7FF") + "]+", r"\p{N}+"],
    "gpt-4o": [r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
    "tekken": [r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
    "deepseek-v3": [r"\p{N}{1,3}", "[" + ranges("4E00-9FA5 3040-309F 30A0-30FF") + "]+",
                    r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
    "bloom": [r" ?[^(\s|.,!?…。，、।۔،)]+"],
    "viking": [r" ?[^(\s|.,!?…。，、।۔،)]+", r"\p{N}"],
    "deepseek-coder": [r"[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", "[" + ranges("4E00-9FA5 800-4E00 AC00-D7FF") + "]+", r"\p{N}"],
}

TEXTS = [
    "", " ", "  ", "\t", "\n", "\n\n", " \n", "\r\n", "a", "Hello world", " Hello world", "Hello  world",
    "Hello   world  ", "Hello\n\n  world\n", "I'm here, you're there; we'll see. They've DON'T I'M WE'LL He'D",
    "'s 't 're 've 'm 'll 'd 'x ''", "don't stop-believin'", "123 4567 89012345 1,000,000 3.14159 ０１２３",
    "x1y22z333w4444", "Ⅻ ½ ² ٣٤٥", "    indented\n\tcode();\n\t\treturn x+y*3;", "if (a <= b && c != d) { return; }",
    "$100 + 5% = ^_^ ~~ || `cmd` <html>", "!!!!!!", "...\n...", "?!?!\r\n\r\nok", "a\u00a0b\u3000c\u2003d",
    "нещо на Български", "Ελληνικά κείμενα", "日本語のテキスト、漢字とかな。", "我想在apple工作1314151天～",
    "한국어 텍스트", "ภาษาไทย", "العربية نص", "हिन्दी पाठ", "e\u0301 cafe\u0301 naïve", "🦙 🚀 😶\u200d🌫️ ✅ 👍🏽",
    "ＡＢＣ ｘｙｚ ！？", "‘quoted’ “double” — dash – en", "µ ẞ ǅ ῼ K Ω", "tab\tsep\tvalues\t", "trailing   ",
    "  leading", "\n\n\n\nlines\n\n", "mixed \r\n\t \u2028 end", "a'b'c' d'", "___init___ __x__ -1 +2",
    "email@example.com https://x.y/z?q=1&r=2#f", "CamelCaseWord snake_case_word kebab-case-word",
    "HELLOworld ÉCOLE École CamelCase HTTPServer iPhone x'S Y'LL can't WON'T a/b/c //comment\n/path/ ", "ŞİMDİ ǅungla ﬁne नमस्ते",
    "(a|b) wait… 你好，世界。 हिन्दी। اردو۔ عربي، done!", "Hyvää päivää, 2024 vuosi (ok)",
]

# Random strings over characters that sit on the classes' edges: the same
# seed gives the same file.
POOL = list(" \t\n\r aZeEsStTlLrRvVdDmMxß") + ["é", "É", "ǅ", "ﬁ", "1", "7", "٣", "Ⅻ", "½", "'", "!", ".", ",", "?", "(", ")",
        "|", "/", "$", "+", "<", "~", "`", "_", "-", "\u00a0", "\u3000", "\u2028", "日", "本", "カ", "ひ", "한", "\u0301",
        "\u093f", "🦙", "\u200d", "\x01", "\x7f", "…", "。", "，", "、", '"', "＃", "Ａ", "ａ", "‘", "’", "  ", "\r\n"]
rng = random.Random(20261129)
TEXTS += ["".join(rng.choice(POOL) for _ in range(rng.randrange(1, 24))) for _ in range(200)]

out = {}
for name, exprs in PRE.items():
    rxs = [regex.compile(e) for e in exprs]
    res = []
    for text in TEXTS:
        pieces = [text] if text else []
        for rx in rxs:
            new = []
            for p in pieces:
                pos = 0
                for m in rx.finditer(p):
                    if m.end() == m.start():
                        continue
                    if m.start() > pos:
                        new.append(p[pos:m.start()])
                    new.append(m.group())
                    pos = m.end()
                if pos < len(p):
                    new.append(p[pos:])
            pieces = new
        res.append(pieces)
    out[name] = res
print(json.dumps({"texts": TEXTS, "splits": out}, ensure_ascii=False, indent=0))
