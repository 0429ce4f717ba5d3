// Unit tests of the nvidia-smi CSV parser and the "tool absent" path.
#include "agent/nvidia_smi.h"

#include <gtest/gtest.h>

namespace llmcap::agent {
namespace {

TEST(NvidiaSmi, ParsesSampleOutput) {
  const auto inv = parse_nvidia_smi_csv(
      "NVIDIA H100 80GB HBM3, 81559, 550.54.15, 700.00\n"
      "NVIDIA A100-SXM4-40GB, 40960, 550.54.15, [N/A]\r\n"
      "\n");
  EXPECT_TRUE(inv.available);
  EXPECT_TRUE(inv.note.empty()) << inv.note;
  ASSERT_EQ(inv.gpus.size(), 2u);
  EXPECT_EQ(inv.gpus[0].index, 0);
  EXPECT_EQ(inv.gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(inv.gpus[0].memory_total_mib, 81559.0);
  EXPECT_EQ(inv.gpus[0].driver_version, "550.54.15");
  EXPECT_EQ(inv.gpus[0].power_limit_w, 700.0);
  EXPECT_EQ(inv.gpus[1].index, 1);
  EXPECT_FALSE(inv.gpus[1].power_limit_w.has_value());
}

TEST(NvidiaSmi, WrongFieldCountIsNotedAndSkipped) {
  const auto inv = parse_nvidia_smi_csv("only, three, fields\nGPU, 1024, 1.0, 100\n");
  ASSERT_EQ(inv.gpus.size(), 1u);
  EXPECT_NE(inv.note.find("line 1"), std::string::npos) << inv.note;
}

TEST(NvidiaSmi, MissingToolIsSkippedNotAnError) {
  const auto inv = query_gpus("/nonexistent/nvidia-smi-llmcap");
  EXPECT_FALSE(inv.available);
  EXPECT_TRUE(inv.gpus.empty());
  EXPECT_NE(inv.note.find("skipped"), std::string::npos) << inv.note;
}

TEST(NvidiaSmi, FailingToolIsSkipped) {
  const auto inv = query_gpus("false");
  EXPECT_FALSE(inv.available);
  EXPECT_NE(inv.note.find("status"), std::string::npos) << inv.note;
}

}  // namespace
}  // namespace llmcap::agent
