// Tokenizer parity reference: 2,000 seeded random strings (ASCII, accents and combining marks, CJK, emoji,
// digit runs, whitespace runs, code, special-token text) encoded by @lenml/tokenizers (transformers.js) with
// the real Llama 3 and Qwen3 tokenizer.json files, add_special_tokens false.
// Usage: node gen_parity.mjs OUT_DIR [COUNT]. Writes OUT_DIR/texts.jsonl (one JSON string per line) and
// OUT_DIR/<model>.ids.jsonl (one JSON id array per line) plus OUT_DIR/<model>.tokenizer_path.
// Avoided on purpose: U+0085 and U+FEFF (JS \s and Oniguruma \s disagree on them, and the reference is JS) and
// lone surrogates (not valid UTF-8).
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { TokenizerLoader } from "@lenml/tokenizers";

const outDir = process.argv[2];
const count = Number(process.argv[3] ?? 2000);
const require = createRequire(import.meta.url);

let seed = 20261203;
function rand() {  // mulberry32
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (list) => list[Math.floor(rand() * list.length)];
const run = (n, f) => Array.from({ length: 1 + Math.floor(rand() * n) }, f).join("");

const words = ["the", "The", "HELLO", "world", "don't", "I'M", "we'll", "they've", "it's", "you'D", "token", "ization"];
const accents = ["café", "naïve", "Ångström", "über", "señor", "e\u0301", "a\u0308", "Ç", "ø", "ß", "İstanbul", "Ελληνικά", "русский"];
const cjk = ["你好", "世界", "日本語", "テスト", "한국어", "中文字符", "漢字"];
const emoji = ["😀", "🚀", "👍🏽", "👨‍👩‍👧", "🇫🇷", "❤️", "🤖"];
const whitespace = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "\u00a0", "\u3000", "\u000b", "\u2003"];
const code = ["def f(x):\n    return x+1", "int main() { return 0; }", "a[i] = b->c;", "if (x != y) {}", "// comment",
  "x := <-ch", "#include <stdio.h>", "{\"k\": [1, 2]}", "SELECT * FROM t;", "$var=@list;"];
const specials = ["<|eot_id|>", "<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|im_start|>",
  "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>", "<|eot_id", "<|im_", "<|reserved_special_token_3|>"];
const punctuation = ["!", "?", "...", "--", "'", "\"", ",", ".", ";", ":", "(", ")", "''", "'s", "'S", "-'ll"];

function fragment() {
  switch (Math.floor(rand() * 10)) {
    case 0: return pick(words);
    case 1: return pick(accents);
    case 2: return pick(cjk);
    case 3: return pick(emoji);
    case 4: return run(12, () => String(Math.floor(rand() * 10)));
    case 5: return run(4, () => pick(whitespace));
    case 6: return pick(code);
    case 7: return pick(specials);
    case 8: return pick(punctuation);
    default: return run(8, () => String.fromCharCode(0x20 + Math.floor(rand() * 95)));
  }
}

const texts = [];
for (let i = 0; i < count; ++i) {
  const parts = run(10, () => (rand() < 0.5 ? " " : "") + fragment());
  texts.push(parts);
}
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, "texts.jsonl"), texts.map((t) => JSON.stringify(t)).join("\n") + "\n");
for (const model of ["llama3", "qwen3"]) {
  const file = require.resolve(`@lenml/tokenizer-${model}/models/tokenizer.json`);
  const config = path.join(path.dirname(file), "tokenizer_config.json");
  const tok = TokenizerLoader.fromPreTrained({
    tokenizerJSON: JSON.parse(fs.readFileSync(file, "utf8")),
    tokenizerConfig: JSON.parse(fs.readFileSync(config, "utf8")),
  });
  const ids = texts.map((t) => JSON.stringify(Array.from(tok.encode(t, { add_special_tokens: false }))));
  fs.writeFileSync(path.join(outDir, `${model}.ids.jsonl`), ids.join("\n") + "\n");
  fs.writeFileSync(path.join(outDir, `${model}.tokenizer_path`), file);
}
