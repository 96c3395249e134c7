// Label values of the metrics textfile: escaped as the Prometheus text format asks, and always
// UTF-8 (node_exporter's textfile collector drops a whole file with one invalid label; a file
// named `bad\xff.log` in a followed directory made one: hostile review 16, i3 M1).
#include <gtest/gtest.h>

#include "daemon/metrics.h"

namespace gpufault::daemon {
namespace {

TEST(MetricsLabel, EscapesQuotesBackslashesAndNewlines) {
    EXPECT_EQ(promLabel("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

TEST(MetricsLabel, BytesThatAreNotUtf8BecomeEscapedTextAndUtf8Stays) {
    EXPECT_EQ(promLabel("/var/log/bad\xff\xfe.log"), "/var/log/bad\\\\xff\\\\xfe.log");
    EXPECT_EQ(promLabel("caf\xc3\xa9.log"), "caf\xc3\xa9.log");
    EXPECT_EQ(promLabel("cut\xe2\x80"), "cut\\\\xe2\\\\x80");
}

}  // namespace
}  // namespace gpufault::daemon
