// generate: streams a completion from a model through pagoda's public API.
//   generate [MODEL] [PROMPT] [MAX_TOKENS]     (MODEL "" or omitted: the bundled stories260K)
// Two requests run at once to show that one Generator batches whatever is submitted to it.
#include <pagoda/generator.h>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  pagoda::GeneratorOptions options;
  options.model = argc > 1 ? argv[1] : "";
  const std::string prompt = argc > 2 ? argv[2] : "Once upon a time";
  const int max_tokens = argc > 3 ? std::stoi(argv[3]) : 64;

  pagoda::Result<std::unique_ptr<pagoda::Generator>> generator = pagoda::Generator::load(options);
  if (!generator.ok()) {
    std::fprintf(stderr, "generate: %s\n", generator.error().c_str());
    return 1;
  }
  std::fprintf(stderr, "%s", (*generator)->description().c_str());

  pagoda::GenerationOptions greedy;
  greedy.max_tokens = max_tokens;
  greedy.temperature = 0.0f;
  pagoda::GenerationOptions sampled = greedy;
  sampled.temperature = 0.8f;
  sampled.seed = 7;

  pagoda::Result<pagoda::GenerationStream> first = (*generator)->submit(prompt, greedy);
  pagoda::Result<pagoda::GenerationStream> second = (*generator)->submit(prompt, sampled);
  if (!first.ok() || !second.ok()) {
    std::fprintf(stderr, "generate: %s\n", (first.ok() ? second.error() : first.error()).c_str());
    return 1;
  }
  std::printf("%s", prompt.c_str());
  while (std::optional<pagoda::GenerationStep> step = first->next()) {
    std::printf("%s", step->text.c_str());
    std::fflush(stdout);
    if (step->finished) std::printf("\n[greedy: %s]\n", std::string(pagoda::finish_reason_name(step->finish_reason)).c_str());
  }
  const pagoda::GenerationResult other = second->wait();
  std::printf("%s%s\n[sampled: %s, %zu tokens]\n", prompt.c_str(), other.text.c_str(),
              std::string(pagoda::finish_reason_name(other.finish_reason)).c_str(), other.token_ids.size());
  return 0;
}
