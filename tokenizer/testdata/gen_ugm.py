# Regenerates ugm-random.json: random byte strings (valid and invalid UTF-8, NFKC
# compatibility characters, whitespace runs) and the ids Debian's python3-sentencepiece
# 0.1.97 gives them with the two shared unigram models. Run from this folder:
#   python3 gen_ugm.py
import random, sys, json
import sentencepiece as s
random.seed(36)
alpha = [c.encode() for c in "abcdefghij klmnopqrstuvwxyz  ABCXYZ0123456789.,;:!?'\"-()\t\n\r"] + [c.encode() for c in "éèàüößçñ世界日本語한국어ﬁﬂ①②ＡＢｃｄ　\u00a0\u2002\u200b\u3000…™½²ℌ☃😀🙂\u0301\u0300\ufeff▁"] + [b"\xff", b"\xe2\x82", b"\xc3", b"\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\x00", b" ", b"</s>", b"<unk>"]
texts=[]
for i in range(400):
    n=random.randint(0,40)
    texts.append(b"".join(random.choice(alpha) for _ in range(n)))
cases=[]
ps={m:s.SentencePieceProcessor(model_file='../../../shared/vocab/ugm/'+m) for m in ["ugm-t5like.model","ugm-bytefb.model"]}
for t in texts:
    cases.append({"text_hex":t.hex(),"t5like":ps["ugm-t5like.model"].encode(t),"bytefb":ps["ugm-bytefb.model"].encode(t)})
with open("ugm-random.json","w") as f:
    f.write("[\n"+",\n".join(json.dumps(c,separators=(",",":")) for c in cases)+"\n]\n")
