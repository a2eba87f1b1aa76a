// The llama.cpp pre-tokenizer table: each split regex written once (llama.cpp's adapted forms, which its hand-
// written fast paths and std::regex run; learned from its src/llama-vocab.cpp), then the names that use them.
#include "tokenizer/llama_pre_tokenizers.h"

#include <fmt/format.h>

#include "tokenizer/pretokenizer.h"

namespace pagoda {
namespace {

// Regexes, grouped by the llama.cpp pre-tokenizer type that introduced them; later types reuse earlier ones.
constexpr std::string_view kPunctuationRuns = R"re([\p{P}\$\+<=>\^~\|]+)re";
constexpr std::string_view kGpt2 = R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))re";
constexpr std::string_view kDigitRuns = R"re(\p{N}+)re";
constexpr std::string_view kThreeAsciiDigits = R"re([0-9][0-9][0-9])re";
constexpr std::string_view kDefaultRegexes[] = {kPunctuationRuns, kGpt2, kDigitRuns, kThreeAsciiDigits};
constexpr std::string_view kGpt2Regexes[] = {kGpt2};
constexpr std::string_view kLlama3 = R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kLlama3Regexes[] = {kLlama3};
constexpr std::string_view kQwen2 = R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kQwen2Regexes[] = {kQwen2};
constexpr std::string_view kQwen35 = R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kQwen35Regexes[] = {kQwen35};
constexpr std::string_view kJais2 = R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})re";
constexpr std::string_view kJais2Regexes[] = {kJais2};
constexpr std::string_view kEachNewline = R"re([\r\n])re";
constexpr std::string_view kDeepseekLlmStep1 = R"re(\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+)re";
constexpr std::string_view kDeepseekLlmStep2 = R"re(\s?[!-/:-~！-／：-～‘-‟　-。]+)re";
constexpr std::string_view kDeepseekLlmStep3 = R"re(\s+$)re";
constexpr std::string_view kCjkHangulRuns = R"re([一-龥ࠀ-一가-퟿]+)re";
constexpr std::string_view kDeepseekLlmRegexes[] = {kEachNewline, kDeepseekLlmStep1, kDeepseekLlmStep2, kDeepseekLlmStep3, kCjkHangulRuns, kDigitRuns};
constexpr std::string_view kDeepseekCoderStep1 = R"re(\s?\p{L}+)re";
constexpr std::string_view kDeepseekCoderStep2 = R"re(\s?\p{P}+)re";
constexpr std::string_view kEachDigit = R"re(\p{N})re";
constexpr std::string_view kDeepseekCoderRegexes[] = {kEachNewline, kDeepseekCoderStep1, kDeepseekCoderStep2, kCjkHangulRuns, kEachDigit};
constexpr std::string_view kDigitsByThree = R"re(\p{N}{1,3})re";
constexpr std::string_view kCjkKanaRuns = R"re([一-龥぀-ゟ゠-ヿ]+)re";
constexpr std::string_view kDeepseek3LlmStep2 = R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kDeepseek3LlmRegexes[] = {kDigitsByThree, kCjkKanaRuns, kDeepseek3LlmStep2};
constexpr std::string_view kSpark25Step2 = R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+|[\r\n]|\s+(?!\S)|\s+)re";
constexpr std::string_view kSpark25Regexes[] = {kDigitsByThree, kCjkKanaRuns, kSpark25Step2, kEachDigit};
constexpr std::string_view kYoutuStep0 = R"re([가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+)re";
constexpr std::string_view kYoutuStep1 = R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kYoutuRegexes[] = {kYoutuStep0, kYoutuStep1};
constexpr std::string_view kFalconPunctuationRuns = R"re([\p{P}\$\+<=>\^~\|`]+)re";
constexpr std::string_view kFalconRegexes[] = {kFalconPunctuationRuns, kGpt2, kThreeAsciiDigits};
constexpr std::string_view kStarcoderRegexes[] = {kEachDigit, kGpt2};
constexpr std::string_view kPoro = R"re( ?[^(\s|.,!?…。，、।۔،)]+)re";
constexpr std::string_view kPoroRegexes[] = {kPoro};
constexpr std::string_view kVikingRegexes[] = {kPoro, kEachDigit};
constexpr std::string_view kTekken = R"re([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kTekkenRegexes[] = {kTekken};
constexpr std::string_view kChameleonStep0 = R"re(<sentinel:[0-9]+>)re";
constexpr std::string_view kChameleonStep1 = R"re((IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z)re";
constexpr std::string_view kChameleonStep2 = R"re(([\t\n]|    |  ))re";
constexpr std::string_view kChameleonStep4 = R"re([\p{P}!-/:-@\[-`{-~])re";
constexpr std::string_view kChameleonRegexes[] = {kChameleonStep0, kChameleonStep1, kChameleonStep2, kEachDigit, kChameleonStep4, kGpt2};
constexpr std::string_view kGpt4o = R"re([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kGpt4oRegexes[] = {kGpt4o};
constexpr std::string_view kGraniteEmbMulti = R"re([^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))*((?=[\p{L}\p{M}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))+((?=[\p{L}\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kGraniteEmbMultiRegexes[] = {kGraniteEmbMulti};
constexpr std::string_view kBailingmoe = R"re('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)re";
constexpr std::string_view kBailingmoeRegexes[] = {kBailingmoe};
constexpr std::string_view kSeedCoder = R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kSeedCoderRegexes[] = {kSeedCoder};
constexpr std::string_view kUfakzeka = R"re([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kUfakzekaRegexes[] = {kUfakzeka};
constexpr std::string_view kNewlineRuns = R"re([^\n]+|[\n]+)re";
constexpr std::string_view kLagunaRegexes[] = {kNewlineRuns, kQwen2};
constexpr std::string_view kGemma4Regexes[] = {kNewlineRuns};
constexpr std::string_view kSuperbpeGroupsOfThree = R"re((?=(\d{3})+(?!\d)))re";  // empty matches: only cuts
constexpr std::string_view kSuperbpeRegexes[] = {kDigitRuns, kSuperbpeGroupsOfThree};
constexpr std::string_view kExaoneMoe = R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+)re";
constexpr std::string_view kExaoneMoeRegexes[] = {kExaoneMoe};
constexpr std::string_view kMinicpm5Step1 = R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kMinicpm5Regexes[] = {kDigitsByThree, kMinicpm5Step1};

using R = std::span<const std::string_view>;

// Flags as llama.cpp's llama_vocab::impl::load sets them per name (ignore_merges, add_bos);
// nfc is the Qwen families' Hugging Face NFC normalizer, which pagoda keeps for parity with the reference.
constexpr LlamaPreTokenizer kTable[] = {
    {.name = "default", .regexes = R(kDefaultRegexes)},
    // GPT-2's regex (llama.cpp has no trailing \s+: a lone space before a word is a gap piece of its own).
    {.name = "gpt-2", .regexes = R(kGpt2Regexes)},
    {.name = "phi-2", .regexes = R(kGpt2Regexes)},
    {.name = "gigachat", .regexes = R(kGpt2Regexes)},
    {.name = "a.x-4.0", .regexes = R(kGpt2Regexes)},
    {.name = "mellum", .regexes = R(kGpt2Regexes)},
    {.name = "exaone4", .regexes = R(kGpt2Regexes)},
    {.name = "jina-es", .regexes = R(kGpt2Regexes)},
    {.name = "jina-de", .regexes = R(kGpt2Regexes)},
    {.name = "jina-v2-es", .regexes = R(kGpt2Regexes)},
    {.name = "jina-v2-de", .regexes = R(kGpt2Regexes)},
    {.name = "modern-bert", .regexes = R(kGpt2Regexes)},
    // llama.cpp also appends SEP after the text for these three when special tokens are added; pagoda adds none.
    {.name = "roberta-bpe", .regexes = R(kGpt2Regexes)},
    {.name = "jina-v1-en", .regexes = R(kGpt2Regexes)},
    {.name = "jina-v2-code", .regexes = R(kGpt2Regexes)},
    {.name = "mpt", .regexes = R(kGpt2Regexes)},
    {.name = "olmo", .regexes = R(kGpt2Regexes)},
    {.name = "jais", .regexes = R(kGpt2Regexes)},
    {.name = "trillion", .regexes = R(kGpt2Regexes)},
    {.name = "granite-docling", .regexes = R(kGpt2Regexes)},
    // Llama 3 and the families that took its tokenizer.
    {.name = "llama3", .regexes = R(kLlama3Regexes), .ignore_merges = true, .add_bos = true},
    {.name = "llama-v3", .regexes = R(kLlama3Regexes), .ignore_merges = true, .add_bos = true},
    {.name = "llama-bpe", .regexes = R(kLlama3Regexes), .ignore_merges = true, .add_bos = true},
    {.name = "falcon3", .regexes = R(kLlama3Regexes), .ignore_merges = true, .add_bos = true},
    {.name = "falcon-h1", .regexes = R(kLlama3Regexes), .ignore_merges = true, .add_bos = true},
    {.name = "pixtral", .regexes = R(kLlama3Regexes), .ignore_merges = true, .add_bos = true},
    {.name = "midm-2.0", .regexes = R(kLlama3Regexes), .ignore_merges = true, .add_bos = true},
    {.name = "lfm2", .regexes = R(kLlama3Regexes), .ignore_merges = true, .add_bos = true},
    {.name = "jina-v5-nano", .regexes = R(kLlama3Regexes), .ignore_merges = true, .add_bos = true},
    {.name = "dbrx", .regexes = R(kLlama3Regexes)},
    {.name = "smaug-bpe", .regexes = R(kLlama3Regexes)},
    {.name = "glm4", .regexes = R(kLlama3Regexes)},
    {.name = "chatglm-bpe", .regexes = R(kLlama3Regexes)},
    {.name = "jais-2", .regexes = R(kJais2Regexes)},
    // Qwen2's regex (every digit alone).
    {.name = "qwen2", .regexes = R(kQwen2Regexes), .nfc = true},
    {.name = "deepseek-r1-qwen", .regexes = R(kQwen2Regexes), .nfc = true},
    {.name = "megrez", .regexes = R(kQwen2Regexes), .nfc = true},
    {.name = "stablelm2", .regexes = R(kQwen2Regexes)},
    {.name = "hunyuan", .regexes = R(kQwen2Regexes)},
    {.name = "solar-open", .regexes = R(kQwen2Regexes)},
    {.name = "kormo", .regexes = R(kQwen2Regexes)},
    {.name = "f2llmv2", .regexes = R(kQwen2Regexes)},
    {.name = "grok-2", .regexes = R(kQwen2Regexes)},
    {.name = "qwen35", .regexes = R(kQwen35Regexes)},  // no NFC: its tokenizer keeps e + U+0301 apart
    {.name = "ufakzeka", .regexes = R(kUfakzekaRegexes)},
    {.name = "laguna", .regexes = R(kLagunaRegexes)},
    {.name = "bailingmoe", .regexes = R(kBailingmoeRegexes)},
    {.name = "bailingmoe2", .regexes = R(kBailingmoeRegexes)},
    {.name = "llada-moe", .regexes = R(kBailingmoeRegexes)},
    {.name = "seed-coder", .regexes = R(kSeedCoderRegexes)},
    {.name = "exaone-moe", .regexes = R(kExaoneMoeRegexes)},
    {.name = "minicpm5", .regexes = R(kMinicpm5Regexes), .ignore_merges = true},
    // DeepSeek.
    {.name = "deepseek-llm", .regexes = R(kDeepseekLlmRegexes)},
    {.name = "deepseek-coder", .regexes = R(kDeepseekCoderRegexes)},
    {.name = "deepseek-v3", .regexes = R(kDeepseek3LlmRegexes)},
    {.name = "hunyuan-dense", .regexes = R(kDeepseek3LlmRegexes)},
    {.name = "joyai-llm", .regexes = R(kDeepseek3LlmRegexes)},
    {.name = "hy_v4", .regexes = R(kDeepseek3LlmRegexes)},
    {.name = "spark2_5", .regexes = R(kSpark25Regexes)},
    {.name = "youtu", .regexes = R(kYoutuRegexes), .ignore_merges = true},
    // Falcon and the StarCoder family (digits one by one, then GPT-2's regex).
    {.name = "falcon", .regexes = R(kFalconRegexes)},
    {.name = "starcoder", .regexes = R(kStarcoderRegexes)},
    {.name = "refact", .regexes = R(kStarcoderRegexes)},
    {.name = "command-r", .regexes = R(kStarcoderRegexes)},
    {.name = "smollm", .regexes = R(kStarcoderRegexes)},
    {.name = "codeshell", .regexes = R(kStarcoderRegexes)},
    {.name = "exaone", .regexes = R(kStarcoderRegexes)},
    {.name = "minerva-7b", .regexes = R(kStarcoderRegexes)},
    {.name = "mellum2", .regexes = R(kStarcoderRegexes)},
    // BLOOM-style splits on punctuation and spaces.
    {.name = "poro-chat", .regexes = R(kPoroRegexes)},
    {.name = "bloom", .regexes = R(kPoroRegexes)},
    {.name = "gpt3-finnish", .regexes = R(kPoroRegexes)},
    {.name = "viking", .regexes = R(kVikingRegexes)},
    // Case-aware word splits (Mistral's tekken, GPT-4o / Llama 4).
    {.name = "tekken", .regexes = R(kTekkenRegexes), .ignore_merges = true, .add_bos = true},
    {.name = "gpt-4o", .regexes = R(kGpt4oRegexes)},
    {.name = "llama4", .regexes = R(kGpt4oRegexes)},
    {.name = "kanana2", .regexes = R(kGpt4oRegexes)},
    {.name = "talkie", .regexes = R(kGpt4oRegexes)},
    {.name = "minimax-m2", .regexes = R(kGpt4oRegexes)},
    {.name = "granite-embed-multi-97m", .regexes = R(kGraniteEmbMultiRegexes), .ignore_merges = true},
    {.name = "chameleon", .regexes = R(kChameleonRegexes), .add_bos = true},
    // Gemma 4 (also what tokenizer.ggml.model "gemma4" implies): SentencePiece-style BPE over whole lines.
    {.name = "gemma4", .regexes = R(kGemma4Regexes), .add_bos = true, .byte_level = false, .bos_always = true},
    {.name = "granite-embed-multi-311m", .regexes = R(kGemma4Regexes), .add_bos = true, .byte_level = false,
     .bos_always = true},
    // Digit runs cut into groups of three from the right.
    {.name = "superbpe", .regexes = R(kSuperbpeRegexes)},
};

// tokenizer.json Split regexes as the Hugging Face files write them (llama.cpp adapts them into the forms above).
constexpr std::string_view kHfQwen35 =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kHfTekken =
    R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kHfGpt4o =
    R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

struct HfSplitName {
  std::string_view regex;
  bool nfc;
  bool ignore_merges;
  std::string_view name;  // must name a kTable entry with the same flags (the reader applies them)
};

constexpr HfSplitName kHfSplitNames[] = {
    {kGpt2SplitRegex, false, false, "gpt-2"},   {kLlama3SplitRegex, false, true, "llama-bpe"},
    {kQwen2SplitRegex, true, false, "qwen2"},   {kHfQwen35, false, false, "qwen35"},
    {kHfTekken, false, true, "tekken"},         {kHfGpt4o, false, false, "gpt-4o"},
};

}  // namespace

std::string_view llama_pre_name_for_hf_split(std::string_view regex, bool nfc, bool ignore_merges) {
  for (const HfSplitName& entry : kHfSplitNames) {
    if (entry.regex == regex && entry.nfc == nfc && entry.ignore_merges == ignore_merges) return entry.name;
  }
  return "";
}

const LlamaPreTokenizer* find_llama_pre_tokenizer(std::string_view name) {
  for (const LlamaPreTokenizer& entry : kTable) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

const LlamaPreTokenizer& default_llama_pre_tokenizer() { return kTable[0]; }

std::string supported_llama_pre_tokenizer_names() {
  std::string names;
  for (const LlamaPreTokenizer& entry : kTable) {
    if (!names.empty()) names += ", ";
    names += entry.name;
  }
  return names;
}

}  // namespace pagoda
