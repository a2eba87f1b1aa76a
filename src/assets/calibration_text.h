// The default calibration text of `pagoda quantize --type awq-int4`: a few short children's stories written for
// pagoda (simple English in the style of TinyStories, none of it taken from that data set or any evaluation
// text), linked into the binary so AWQ works with no file at hand. --calib FILE replaces it.
#pragma once

#include <string_view>

namespace pagoda {

std::string_view default_calibration_text();

}  // namespace pagoda
