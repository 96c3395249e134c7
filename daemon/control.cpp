#include "daemon/control.h"

#include <fmt/format.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "collectors/common/evidence_json.h"
#include "collectors/common/text.h"
#include "daemon/daemon.h"
#include "daemon/sources/file_tail.h"
#include "schema/queries.h"

namespace gpufault::daemon {

namespace asio = boost::asio;
using local = asio::local::stream_protocol;

namespace {
constexpr size_t kMaxRequest = 256;
}  // namespace

struct ControlServer::Conn {
    Conn(local::socket s, std::shared_ptr<size_t> live_count, size_t max_queued)
        : sock(std::move(s)),
          idle(sock.get_executor()),
          live(std::move(live_count)),
          maxQueued(max_queued) {
        ++*live;
    }
    ~Conn() { --*live; }
    local::socket sock;
    asio::steady_timer idle;       ///< closes a client that has not sent its request in time
    std::shared_ptr<size_t> live;  ///< the server's count of open connections
    asio::streambuf in{kMaxRequest};
    std::deque<std::string> out;
    size_t queued = 0;  ///< bytes in `out`
    size_t maxQueued;   ///< beyond this, lines are dropped (and counted)
    bool writing = false, closeAfter = false;
    uint64_t dropped = 0;
};

namespace {

/// True when the peer may talk to the daemon: root, our own user, or in group `gid`.
bool allowed(int fd, gid_t gid) {
    struct ucred cred {};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return false;
    if (cred.uid == 0 || cred.uid == ::geteuid()) return true;
    if (gid == static_cast<gid_t>(-1)) return false;
    if (cred.gid == gid) return true;
    gid_t groups[256];
    socklen_t glen = sizeof groups;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen) != 0) return false;
    for (size_t i = 0; i < glen / sizeof(gid_t); ++i)
        if (groups[i] == gid) return true;
    return false;
}

void send(const std::shared_ptr<ControlServer::Conn>& c, std::string line);

/// An incident across recomputations: its first record (ids may change).
std::string incidentKey(const IncidentRow& i) {
    return fmt::format("{}:{}:{}", i.source, i.line, i.kind);
}

/// `{"error":"…"}` (invalid UTF-8 replaced).
std::string errorJson(const std::string& msg) {
    return nlohmann::json{{"error", msg}}.dump(
        -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void flush(const std::shared_ptr<ControlServer::Conn>& c) {
    if (c->writing || c->out.empty()) {
        if (!c->writing && c->out.empty() && c->closeAfter) {
            boost::system::error_code ec;
            c->sock.shutdown(local::socket::shutdown_both, ec);
            c->sock.close(ec);
        }
        return;
    }
    c->writing = true;
    asio::async_write(c->sock, asio::buffer(c->out.front()),
                      [c](const boost::system::error_code& ec, size_t) {
                          c->writing = false;
                          if (ec) {
                              c->out.clear();
                              c->queued = 0;
                              boost::system::error_code ig;
                              c->sock.close(ig);
                              return;
                          }
                          c->queued -= c->out.front().size();
                          c->out.pop_front();
                          if (c->dropped > 0 && c->queued < c->maxQueued / 2) {
                              auto n = c->dropped;
                              c->dropped = 0;
                              send(c, nlohmann::json{{"type", "dropped"}, {"lines", n}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
                          }
                          flush(c);
                      });
}

void send(const std::shared_ptr<ControlServer::Conn>& c, std::string line) {
    if (!c->sock.is_open()) return;
    // A watcher too slow to read loses lines beyond its queue (at least one line is queued:
    // a single line larger than the queue still goes).
    if (!c->out.empty() && c->queued + line.size() + 1 > c->maxQueued) {
        ++c->dropped;
        return;
    }
    c->out.push_back(std::move(line) + "\n");
    c->queued += c->out.back().size();
    flush(c);
}

}  // namespace

ControlServer::ControlServer(State& s)
    : s_(s),
      path_(s.cfg.socket_path),
      acceptor_(s.io),
      backoff_(s.io),
      live_(std::make_shared<size_t>(0)) {}

void ControlServer::close() {
    boost::system::error_code ec;
    acceptor_.close(ec);
    backoff_.cancel();
    for (const auto& w : watchers_) w->sock.close(ec);
    watchers_.clear();
    unlinkOwn();
}

void ControlServer::unlinkOwn() {
    struct stat st {};
    if (bound_ && ::lstat(path_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) &&
        st.st_dev == bound_->first && st.st_ino == bound_->second)
        ::unlink(path_.c_str());
    bound_.reset();
}

ControlServer::~ControlServer() {
    boost::system::error_code ec;
    acceptor_.close(ec);
    for (const auto& w : watchers_) w->sock.close(ec);
    unlinkOwn();
}

std::expected<std::unique_ptr<ControlServer>, std::string> ControlServer::open(State& s) {
    std::unique_ptr<ControlServer> srv(new ControlServer(s));
    const std::string& path = srv->path_;
    // Asio's endpoint constructor throws for a path that does not fit sun_path (the config
    // check refuses it too): an error value here, never an exception out of start-up.
    constexpr size_t kMaxPath = sizeof(sockaddr_un{}.sun_path) - 1;
    if (path.empty() || path.size() > kMaxPath)
        return std::unexpected(
            fmt::format("{}: a socket path must be 1 to {} bytes long", path, kMaxPath));
    std::error_code fec;
    auto dir = std::filesystem::path(path).parent_path();
    if (!dir.empty()) std::filesystem::create_directories(dir, fec);
    boost::system::error_code ec;
    {
        // A live daemon behind an existing socket is an error; a stale file is replaced.
        local::socket probe(s.io);
        probe.connect(local::endpoint(path), ec);
        if (!ec) return std::unexpected(fmt::format("{}: another gpufaultd is listening", path));
        ::unlink(path.c_str());
    }
    srv->acceptor_.open(local(), ec);
    if (!ec) srv->acceptor_.bind(local::endpoint(path), ec);
    if (struct stat st{}; !ec && ::lstat(path.c_str(), &st) == 0)
        srv->bound_ = std::pair{st.st_dev, st.st_ino};
    if (!ec) srv->acceptor_.listen(16, ec);
    if (ec) return std::unexpected(fmt::format("{}: {}", path, ec.message()));
    if (!s.cfg.socket_group.empty()) {
        if (const struct group* g = ::getgrnam(s.cfg.socket_group.c_str())) {
            srv->gid_ = g->gr_gid;
            if (::geteuid() == 0) (void)::chown(path.c_str(), 0, g->gr_gid);
        } else {
            logLine(4, fmt::format("{}: group '{}' does not exist: only root may connect", path,
                                   s.cfg.socket_group));
        }
    }
    ::chmod(path.c_str(), 0660);
    // The record cursor: what is committed now (start-up and reloads run between commits).
    if (s.store && (!s.txn || !s.txn->open()))
        if (auto m = maxEvidenceId(s.store->db()); m) srv->lastEvidence_ = *m;
    srv->accept();
    return srv;
}

void ControlServer::accept() {
    acceptor_.async_accept([this](const boost::system::error_code& ec, local::socket sock) {
        if (ec == asio::error::operation_aborted) return;
        if (ec && ec != asio::error::connection_aborted) return acceptFailed(ec);
        if (acceptFailing_) {
            acceptFailing_ = false;
            logLine(5, fmt::format("{}: accepting connections again", path_));
        }
        backoffMs_ = 0;
        if (!ec) admit(std::move(sock));
        accept();
    });
}

void ControlServer::acceptFailed(const boost::system::error_code& ec) {
    // EMFILE/ENFILE (and any other failure) leave the connection queued: accepting again at
    // once would spin. Wait 10 ms, doubling up to 1 s, and say so once.
    ++acceptErrors_;
    backoffMs_ = backoffMs_ == 0 ? 10 : std::min<uint64_t>(backoffMs_ * 2, 1000);
    if (!acceptFailing_) {
        acceptFailing_ = true;
        logLine(4,
                fmt::format(
                    "{}: accept: {}; retrying with a back-off of up to 1 s", path_, ec.message()));
    }
    backoff_.expires_after(std::chrono::milliseconds(backoffMs_));
    backoff_.async_wait([this](const boost::system::error_code& e) {
        if (!e && acceptor_.is_open()) accept();
    });
}

void ControlServer::admit(local::socket sock) {
    auto c = std::make_shared<Conn>(std::move(sock), live_, s_.cfg.watch_queue_kib << 10);
    if (!allowed(c->sock.native_handle(), gid_)) {
        c->closeAfter = true;
        send(c, R"({"error":"permission denied"})");
        return;
    }
    if (*live_ > s_.cfg.max_clients) {  // this one included
        ++refused_;
        c->closeAfter = true;
        send(c,
             errorJson(fmt::format("too many connections (control.max_clients = {})",
                                   s_.cfg.max_clients)));
        return;
    }
    // A client that sends nothing must not hold its slot for ever.
    c->idle.expires_after(std::chrono::milliseconds(s_.cfg.idle_timeout_ms));
    c->idle.async_wait([w = std::weak_ptr<Conn>(c)](const boost::system::error_code& ec) {
        auto c = w.lock();
        if (ec || !c) return;
        boost::system::error_code ig;
        c->sock.close(ig);
    });
    serve(c);
}

void ControlServer::serve(std::shared_ptr<Conn> c) {
    asio::async_read_until(
        c->sock, c->in, '\n', [this, c](const boost::system::error_code& ec, size_t n) {
            if (ec) {
                c->idle.cancel();
                return;
            }
            std::string req(asio::buffers_begin(c->in.data()),
                            asio::buffers_begin(c->in.data()) + static_cast<long>(n) - 1);
            if (!req.empty() && req.back() == '\r') req.pop_back();
            if (req == "status") {
                c->closeAfter = true;
                send(c, statusJson());
            } else if (req == "watch" && watchers_.size() >= s_.cfg.max_watchers) {
                ++refused_;
                c->closeAfter = true;
                send(c,
                     errorJson(fmt::format("too many watchers (control.max_watchers = {})",
                                           s_.cfg.max_watchers)));
            } else if (req == "watch") {
                c->idle.cancel();  // a watcher only reads
                if (watchers_.empty()) {
                    // The record cursor is not read here: the loop's transaction may hold
                    // records not committed yet (a file copied just before), and max(id) on
                    // its connection would count them as already told. It is the last id
                    // published after a commit (published()), so a watcher gets every record
                    // committed after its request. Incidents: those stored now are known.
                    announced_.clear();
                    if (auto inc = queryIncidents(s_.store->db()); inc)
                        for (const auto& i : *inc)
                            announced_[incidentKey(i)] = {i.members, i.kinds};
                }
                watchers_.insert(c);
                send(c, R"({"type":"watching"})");
                // A closed client shows as a read error: forget it then.
                auto sink = std::make_shared<std::array<char, 64>>();
                c->sock.async_read_some(
                    asio::buffer(*sink), [this, c, sink](const boost::system::error_code&, size_t) {
                        watchers_.erase(c);
                        boost::system::error_code ig;
                        c->sock.close(ig);
                    });
            } else {
                c->closeAfter = true;
                send(c, errorJson("unknown request: " + req.substr(0, 64)));
            }
        });
}

std::string ControlServer::statusJson() const {
    nlohmann::json j;
    j["version"] = GPUFAULT_VERSION;
    j["pid"] = ::getpid();
    j["uptime_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - s_.started)
                        .count();
    j["store"] = {{"path", s_.cfg.store_path},
                  {"bytes", storeFileBytes(s_.cfg.store_path)},
                  {"error", s_.store_error}};
    j["commits"] = s_.commits;
    if (s_.worker) {
        auto w = s_.worker->status();
        j["correlations"] = w.correlations;
        j["worker"] = {{"correlations", w.correlations},
                       {"interrupted", w.interrupted},
                       {"failed", w.failed},
                       {"diagnosed", w.diagnosed},
                       {"busy", w.busy},
                       {"queued", w.queued},
                       {"last_s", w.last_s},
                       {"last_correlate_s", w.last_correlate_s},
                       {"last_write_s", w.last_write_s},
                       {"last_diagnose_s", w.last_diagnose_s},
                       {"last_records", w.last_records},
                       {"last_incidents", w.last_incidents},
                       {"last_rows", w.last_rows},
                       {"last_transactions", w.last_transactions},
                       {"jobs_queued", w.jobs_queued},
                       {"jobs_done", w.jobs_done},
                       {"error", w.error}};
    } else {
        j["correlations"] = 0;
    }
    j["config"] = s_.cfg.path;
    j["control"] = {{"clients", *live_},
                    {"watchers", watchers_.size()},
                    {"refused", refused_},
                    {"accept_errors", acceptErrors_}};
    if (s_.files)
        j["files"] = {{"watched", s_.files->watched()},
                      {"retrying", s_.files->retrying()},
                      {"scans", s_.files->scans()},
                      {"poll_interval_ms", s_.cfg.poll_ms}};
    auto streams = nlohmann::json::array();
    for (const auto& src : s_.sources)
        for (const auto& st : src->status())
            streams.push_back({{"source", st.source},
                               {"name", st.name},
                               {"position", st.position},
                               {"lines", st.lines},
                               {"evidence", st.evidence},
                               {"lag", st.lag},
                               {"lost_records", st.lost_records},
                               {"lost_bytes", st.lost_bytes},
                               {"active", st.active},
                               {"error", st.error}});
    j["streams"] = std::move(streams);
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void ControlServer::published(bool incidents) {
    if (!s_.store) return;
    if (watchers_.empty()) {  // called after a commit: every record up to max(id) is committed
        if (auto m = maxEvidenceId(s_.store->db()); m) lastEvidence_ = *m;
        return;
    }
    EvidenceFilter f;
    f.after_id = lastEvidence_;
    auto ev = queryEvidence(s_.store->db(), f);
    if (ev) {
        for (const auto& e : *ev) {
            lastEvidence_ = std::max(lastEvidence_, e.id);
            nlohmann::json j = toJson(e.e);
            j["type"] = "evidence";
            j["id"] = e.id;
            j["source"] = e.source;
            for (const auto& w : watchers_) send(w, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
        }
    }
    if (!incidents) return;
    auto inc = queryIncidents(s_.store->db());
    if (!inc) return;
    for (const auto& i : *inc) {
        auto [it, fresh] = announced_.try_emplace(incidentKey(i), i.members, i.kinds);
        std::optional<int64_t> before;
        if (!fresh) {  // known: told again only when it gained records
            if (it->second.first == i.members && it->second.second == i.kinds) continue;
            before = it->second.first;
            it->second = {i.members, i.kinds};
        }
        nlohmann::json j{{"type", before ? "incident_update" : "incident"},
                         {"id", i.id},
                         {"kind", i.kind},
                         {"signature", i.signature},
                         {"members", i.members},
                         {"kinds", i.kinds},
                         {"source", i.source},
                         {"line", i.line}};
        if (i.address) j["address"] = text::hexAddr(*i.address);
        if (i.pid) j["pid"] = *i.pid;
        if (i.kernel) j["kernel"] = *i.kernel;
        if (before) j["members_before"] = *before;
        for (const auto& w : watchers_) send(w, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
}

}  // namespace gpufault::daemon
