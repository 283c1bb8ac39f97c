#include "seqlab/model/model_config.h"

#include <gtest/gtest.h>

using namespace seqlab;

TEST(ModelConfig, JsonRoundTrip) {
  ModelConfig c;
  c.mixer.arch = "t2r";
  c.mixer.d_model = 48;
  c.n_layer = 3;
  c.validate();
  auto back = ModelConfig::from_json(c.to_json(), "x");
  EXPECT_EQ(back.to_json(), c.to_json());
  EXPECT_EQ(back.mixer.arch, "linear");
  EXPECT_EQ(back.mixer.feature_map, "t2r");
}

TEST(ModelConfig, FeatureMapNameIsAnArchAlias) {
  ModelConfig c;
  c.mixer.arch = "hedgehog";
  c.validate();
  EXPECT_EQ(c.mixer.arch, "linear");
  EXPECT_EQ(c.mixer.feature_map, "hedgehog");
}

static std::string error_of(ModelConfig c) {
  try {
    c.validate();
  } catch (const seqlab::Error& e) {
    return e.what();
  }
  return "";
}

TEST(ModelConfig, ImpossibleConfigsAreErrors) {
  ModelConfig c;
  c.mixer.d_model = 30;
  c.mixer.n_head = 4;
  EXPECT_NE(error_of(c).find("divisible"), std::string::npos);
  c = ModelConfig();
  c.mixer.arch = "transformerxl";
  EXPECT_NE(error_of(c).find("unknown architecture 'transformerxl'"), std::string::npos);
  c = ModelConfig();
  c.mixer.feature_map = "cosformer";
  EXPECT_NE(error_of(c).find("unknown feature map"), std::string::npos);
  c = ModelConfig();
  c.mixer.arch = "lstm";
  c.mixer.causal = false;
  EXPECT_NE(error_of(c).find("bidirectional"), std::string::npos);
  c = ModelConfig();
  c.mixer.qrnn_window = 3;
  EXPECT_NE(error_of(c).find("qrnn_window"), std::string::npos);
  c = ModelConfig();
  c.head = "tag";
  c.n_classes = 1;
  EXPECT_NE(error_of(c).find("n_classes"), std::string::npos);
  c = ModelConfig();  // lm is also the stand-in before a task sets the head: the trainer checks
  c.tie_tag_head = true;
  EXPECT_EQ(error_of(c), "");
  c.head = "classify";  // a tied classify head (and its exits) reads classes off token rows
  c.vocab_size = 5;
  c.n_classes = 3;
  EXPECT_EQ(error_of(c), "");
  c.n_classes = 6;
  EXPECT_NE(error_of(c).find("n_classes <= vocab_size (got 6 classes, 5 tokens)"),
            std::string::npos);
  c.head = "tag";
  c.vocab_size = 5;
  c.n_classes = 6;
  EXPECT_NE(error_of(c).find("n_classes <= vocab_size (got 6 classes, 5 tokens)"),
            std::string::npos);
  c.n_classes = 5;
  EXPECT_EQ(error_of(c), "");
  EXPECT_EQ(error_of(ModelConfig()), "");
}

TEST(ModelConfig, StrictReader) {
  auto j = ModelConfig().to_json();
  j["d_modle"] = 3;
  EXPECT_THROW(ModelConfig::from_json(j, "cfg.json"), seqlab::Error);
  j = ModelConfig().to_json();
  j["d_model"] = "wide";
  try {
    ModelConfig::from_json(j, "cfg.json");
    FAIL() << "a string d_model was accepted";
  } catch (const seqlab::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cfg.json: field 'd_model' must be an integer"),
              std::string::npos)
        << e.what();
  }
}

TEST(ModelConfig, IntegerFieldsRejectFractionsAndNegativeSeeds) {
  auto j = ModelConfig().to_json();
  j["d_model"] = 2.7;
  EXPECT_THROW(ModelConfig::from_json(j, "cfg.json"), seqlab::Error);
  j = ModelConfig().to_json();
  j["init_seed"] = -1;
  EXPECT_THROW(ModelConfig::from_json(j, "cfg.json"), seqlab::Error);
  // A non-negative value built in C++ is a signed JSON integer; it must read like a parsed one.
  j["init_seed"] = int64_t{7};
  ASSERT_FALSE(j["init_seed"].is_number_unsigned());
  EXPECT_EQ(ModelConfig::from_json(j, "cfg.json").mixer.init_seed, 7u);
}
