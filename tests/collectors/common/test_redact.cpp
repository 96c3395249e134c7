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

// Each name and whether its value is kept (false) or redacted (true).
TEST(Redact, SecretNameRuleRowByRow) {
    struct Row {
        const char* name;
        bool secret;
    };
    const Row rows[] = {
        // contained anywhere
        {"HF_TOKEN", true},
        {"AWS_SECRET_ACCESS_KEY", true},
        {"DJANGO_SECRET_KEY", true},
        {"MINIO_SECRET_KEY", true},
        {"PGPASSWORD", true},
        {"SMTP_PASSWD", true},
        {"GPG_PASSPHRASE", true},
        {"SSH_KEY_PASSPHRASE", true},
        {"GOOGLE_APPLICATION_CREDENTIALS", true},
        {"AZURE_CREDENTIAL", true},
        {"DOCKER_CREDS", true},
        {"REGISTRY_CREDS_FILE", true},
        {"WANDB_API_KEY", true},
        {"GH_AUTH", true},
        {"JUPYTER_COOKIE_SECRET", true},
        {"SESSION_ID", true},
        {"--hf-token", true},
        {"--passphrase", true},
        // short words as whole parts
        {"DB_PW", true},
        {"NAS_PW", true},
        {"MYSQL_PWD", true},
        {"REDIS_PASS", true},
        {"DB_PASS_FILE", true},
        {"LDAP_CRED", true},
        {"db.pw", true},
        {"--pw", true},
        {"--pass", true},
        {"-pw", true},
        // not secrets
        {"PWD", false},
        {"--pwd", false},
        {"HIP_PWR_MODE", false},
        {"CUDA_PASSTHROUGH", false},
        {"COMPASS_DIR", false},
        {"NCCL_CREDIT_LIMIT", false},
        {"HIP_VISIBLE_DEVICES", false},
        {"AMD_LOG_LEVEL", false},
        {"HSA_OVERRIDE_GFX_VERSION", false},
        {"PYTORCH_CUDA_ALLOC_CONF", false},
        {"--batch", false},
        {"", false},
    };
    for (const auto& r : rows) EXPECT_EQ(looksSecret(r.name, "x"), r.secret) << r.name;
}

TEST(Redact, UrlCredentialsAreReplacedAndTheRestKept) {
    EXPECT_EQ(redactUrlCredentials("https://bob:hunter2@git.example.com/r.git"),
              "https://<redacted>@git.example.com/r.git");
    EXPECT_EQ(redactUrlCredentials("curl -s https://a:b@h/x?q=1 http://c:d@[::1]:80/#f"),
              "curl -s https://<redacted>@h/x?q=1 http://<redacted>@[::1]:80/#f");
    EXPECT_EQ(redactUrlCredentials("http://u:p@w@h/"), "http://<redacted>@h/");
    EXPECT_EQ(redactUrlCredentials("ssh://git@github.com/x"), "ssh://git@github.com/x");
    EXPECT_EQ(redactUrlCredentials("http://proxy:3128/a@b"), "http://proxy:3128/a@b");
    EXPECT_EQ(redactUrlCredentials("no url here: @ ://"), "no url here: @ ://");
}

TEST(Redact, CommandLineKeepsEverythingButTheSecrets) {
    auto out = redactArgs({"python3", "train.py", "--batch=8", "--hf-token=hf_abc", "--password",
                           "s3cret", "--data", "s3://u:p@bucket/x", "--key-file"});
    std::vector<std::string> want = {"python3",
                                     "train.py",
                                     "--batch=8",
                                     "--hf-token=<redacted>",
                                     "--password",
                                     "<redacted>",
                                     "--data",
                                     "s3://<redacted>@bucket/x",
                                     "--key-file"};
    EXPECT_EQ(out, want);
    EXPECT_EQ(redactArgs({"rsync", "--db-pw=x", "--pass", "y", "--mirror=https://u:p@m/"}),
              (std::vector<std::string>{"rsync",
                                        "--db-pw=<redacted>",
                                        "--pass",
                                        "<redacted>",
                                        "--mirror=https://<redacted>@m/"}));
    // argv[0] is never taken for an option.
    EXPECT_EQ(redactArgs({"--token-tool"}), std::vector<std::string>{"--token-tool"});
}

// hostile4b F3: secrets given as assignments, inside `sh -c` strings, as HTTP credentials.
TEST(Redact, AssignmentsShellStringsAndHttpCredentials) {
    EXPECT_EQ(redactArgs({"env", "HF_TOKEN=hf_PLANTED_A", "AWS_SECRET_ACCESS_KEY=PLANTED_B",
                          "HIP_VISIBLE_DEVICES=0", "/bin/true"}),
              (std::vector<std::string>{"env", "HF_TOKEN=<redacted>",
                                        "AWS_SECRET_ACCESS_KEY=<redacted>",
                                        "HIP_VISIBLE_DEVICES=0", "/bin/true"}));
    EXPECT_EQ(redactArgs({"docker", "run", "-e", "MY_TOKEN=PLANTED_C", "img"}),
              (std::vector<std::string>{"docker", "run", "-e", "MY_TOKEN=<redacted>", "img"}));
    EXPECT_EQ(redactArgs({"sh", "-c", "python train.py --token=X  --lr 3 && WANDB_API_KEY=k x"}),
              (std::vector<std::string>{
                  "sh", "-c", "python train.py --token=<redacted>  --lr 3 && WANDB_API_KEY=<redacted> x"}));
    EXPECT_EQ(redactArgs({"curl", "-H", "Authorization: Bearer abc.def", "-u", "bob:hunter2",
                          "--user=al:pw", "https://h/"}),
              (std::vector<std::string>{"curl", "-H", "Authorization: Bearer <redacted>", "-u",
                                        "bob:<redacted>", "--user=al:<redacted>", "https://h/"}));
    EXPECT_EQ(redactArgs({"sh", "-c", "curl -H \"X-Api-Key: s3cr3t\" -H 'Authorization: Token t0k'"}),
              (std::vector<std::string>{
                  "sh", "-c",
                  "curl -H \"X-Api-Key: <redacted>\" -H 'Authorization: Token <redacted>'"}));
    // Not secrets: a plain assignment, a word that is only a number, the working directory.
    EXPECT_EQ(redactArgs({"env", "PWD=/x", "N=3", "run"}),
              (std::vector<std::string>{"env", "PWD=/x", "N=3", "run"}));
}

// hostile9a F5: the stored script is the script that ran, minus the secrets: separators stay,
// a quoted value goes whole, a one-word assignment with blanks goes whole.
TEST(Redact, ScriptsKeepTheirSeparatorsAndQuotedValuesGoWhole) {
    EXPECT_EQ(redactArgs({"sh", "-c", "A=1; TOKEN=s; echo $A"}),
              (std::vector<std::string>{"sh", "-c", "A=1; TOKEN=<redacted>; echo $A"}));
    EXPECT_EQ(redactArgs({"sh", "-c", "TOKEN=\"sek ret25\" true&&HF_TOKEN='a b'|cat"}),
              (std::vector<std::string>{"sh", "-c",
                                        "TOKEN=<redacted> true&&HF_TOKEN=<redacted>|cat"}));
    EXPECT_EQ(redactArgs({"env", "TOKEN=sek ret24", "MSG=hello world", "x"}),
              (std::vector<std::string>{"env", "TOKEN=<redacted>", "MSG=hello world", "x"}));
    EXPECT_EQ(redactArgs({"sh", "-c", "echo 'a;b' \"TOKEN=x y\" (PW=z)"}),
              (std::vector<std::string>{"sh", "-c",
                                        "echo 'a;b' \"TOKEN=<redacted>\" (PW=<redacted>)"}));
}

// hostile9c 7: a header glued to its value; hostile9a F5: `--header=Authorization:Basic_x`.
TEST(Redact, HeaderNamesGluedToTheirValues) {
    EXPECT_EQ(redactArgs({"curl", "-H", "authorization:bearer hunter2_I", "-H", "X-Api-Key:k3y",
                          "--header=Authorization:Basic_x", "-H", "Accept:text/html"}),
              (std::vector<std::string>{"curl", "-H", "authorization:bearer <redacted>", "-H",
                                        "X-Api-Key:<redacted>",
                                        "--header=Authorization:Basic_<redacted>", "-H",
                                        "Accept:text/html"}));
}
