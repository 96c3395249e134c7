// gpufaultd's control socket: `gpufault status` and `gpufault watch` talk to it.
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded
#include <boost/asio.hpp>
#include <expected>
#include <memory>
#include <set>
#include <string>
#include <sys/types.h>

namespace gpufault::daemon {

struct State;

/// A Unix stream socket (mode 0660, group `control.group`). A client sends one request line:
///   `status` → one JSON object line (streams with position, lines, evidence, lag, lost
///              records and bytes; store path, size and error; uptime), then the server closes;
///   `watch`  → JSON lines as records (`{"type":"evidence",…}`) and incidents
///              (`{"type":"incident",…}`) are committed, until the client closes.
/// Peers are checked with SO_PEERCRED and SO_PEERGROUPS: root, the daemon's own user, or a
/// member (primary or supplementary) of the group; others get `{"error":"permission denied"}`.
/// A watcher that reads too slowly loses lines beyond a bounded queue; the loss is counted
/// and told to it (`{"type":"dropped","lines":N}`).
class ControlServer {
  public:
    /// Binds the socket of `s.cfg` (a stale socket file is replaced; one with a live server
    /// behind it is an error) and starts accepting. Errors name the path.
    static std::expected<std::unique_ptr<ControlServer>, std::string> open(State& s);
    ~ControlServer();

    /// Stops accepting and closes every connection (the object must outlive queued handlers).
    void close();

    /// New records (and, with `incidents`, recomputed incidents) were committed: sends what is
    /// new to every watcher.
    void published(bool incidents);

    struct Conn;

  private:
    explicit ControlServer(State& s);
    void accept();
    void serve(std::shared_ptr<Conn> c);
    std::string statusJson() const;

    State& s_;
    std::string path_;
    gid_t gid_ = static_cast<gid_t>(-1);
    boost::asio::local::stream_protocol::acceptor acceptor_;
    std::set<std::shared_ptr<Conn>> watchers_;
    int64_t lastEvidence_ = 0;
    std::set<std::string> announced_;  ///< incidents told to watchers (first record key)
};

}  // namespace gpufault::daemon
