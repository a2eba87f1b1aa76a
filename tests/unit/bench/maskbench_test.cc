// maskbench.h's pure parts: the instance text as Python's json.dumps writes it, a file's category, percentiles.
#include "bench/maskbench.h"

#include <gtest/gtest.h>

namespace pagoda::bench {
namespace {

TEST(Maskbench, PythonJsonDumpsSeparatorsOrderAndEscapes) {
  const nlohmann::ordered_json v =
      nlohmann::ordered_json::parse(R"({"z":1,"a":[true,null,{"k":"v\n\u00e9"}],"n":-2.5,"e":{},"l":[]})");
  // Python keeps insertion order, writes ", " and ": ", escapes control characters and keeps non-ASCII as is.
  EXPECT_EQ(python_json_dumps(v), "{\"z\": 1, \"a\": [true, null, {\"k\": \"v\\n\xc3\xa9\"}], \"n\": -2.5, \"e\": {}, "
                                  "\"l\": []}");
  EXPECT_EQ(python_json_dumps(nlohmann::ordered_json("x")), "\"x\"");
  EXPECT_EQ(python_json_dumps(nlohmann::ordered_json::parse("100.0")), "100.0");
}

TEST(Maskbench, CategoryOfAFileName) {
  EXPECT_EQ(maskbench_category("Github_easy---o10008.json"), "Github_easy");
  EXPECT_EQ(maskbench_category("/data/Synthesized---draft4_valid_ref_id36_subschema1_not_2.json"), "Synthesized");
  EXPECT_EQ(maskbench_category("BFCL_parallel_multiple_12.json"), "BFCL_parallel_multiple");
  EXPECT_EQ(maskbench_category("other.json"), "other");
}

TEST(Maskbench, PercentilesOverSamples) {
  const MaskbenchPercentiles p = maskbench_percentiles({5, 1, 4, 2, 3});
  EXPECT_EQ(p.count, 5);
  EXPECT_DOUBLE_EQ(p.p50, 3);
  EXPECT_DOUBLE_EQ(p.p100, 5);
  EXPECT_GT(p.p99, 4.9);
  EXPECT_EQ(maskbench_percentiles({}).count, 0);
}

}  // namespace
}  // namespace pagoda::bench
