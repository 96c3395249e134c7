// Secrets in environment values and command lines are not stored.
#include <gtest/gtest.h>

#include "collectors/common/redact.h"

using namespace gpufault;

TEST(Redact, SecretNamesAndUrlsWithCredentials) {
    EXPECT_TRUE(looksSecret("HF_TOKEN", "hf_x"));
    EXPECT_TRUE(looksSecret("wandb_api_key", "x"));
    EXPECT_TRUE(looksSecret("PROXY", "http://bob:pw@proxy:3128"));
    EXPECT_FALSE(looksSecret("PROXY", "http://proxy:3128/a@b"));
    EXPECT_FALSE(looksSecret("HIP_VISIBLE_DEVICES", "0,1"));
}

TEST(Redact, CommandLineKeepsEverythingButTheSecrets) {
    auto out = redactArgs({"python3", "train.py", "--batch=8", "--hf-token=hf_abc", "--password",
                           "s3cret", "--data", "s3://u:p@bucket/x", "--key-file"});
    std::vector<std::string> want = {"python3", "train.py", "--batch=8",
                                     "--hf-token=<redacted>", "--password", "<redacted>",
                                     "--data", "<redacted>", "--key-file"};
    EXPECT_EQ(out, want);
    // argv[0] is never taken for an option.
    EXPECT_EQ(redactArgs({"--token-tool"}), std::vector<std::string>{"--token-tool"});
}
