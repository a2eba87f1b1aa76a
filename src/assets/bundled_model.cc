// Gives the embedded GGUF bytes a typed span.
#include "assets/bundled_model.h"

extern "C" const uint8_t pagoda_bundled_model_begin[];
extern "C" const uint8_t pagoda_bundled_model_end[];

namespace pagoda {

std::span<const uint8_t> bundled_model_gguf() {
  return {pagoda_bundled_model_begin, size_t(pagoda_bundled_model_end - pagoda_bundled_model_begin)};
}

}  // namespace pagoda
