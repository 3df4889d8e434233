// known_hosts files (adapters/known_hosts.h): the lines OpenSSH writes, read as OpenSSH reads
// them; the host key check's verdicts and messages. The keys were made by ssh-keygen; the
// hashed lines by `ssh-keygen -H`; the fingerprints and sizes are what `ssh-keygen -lf`
// printed for them.

#include "reconciler/adapters/known_hosts.h"

#include <catch2/catch.hpp>
#include <string>

namespace rg::adapters {
namespace {

constexpr const char* kEd25519 =
    "AAAAC3NzaC1lZDI1NTE5AAAAIDhTx6KBehl1uF2HTDj+RGOBPILpYXgJI6TpC9MV72nC";
constexpr const char* kEcdsa =
    "AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBBRyIBYSHpXyvZa3h49ApeLouDCQ0pV/"
    "g2bW+j1FyTMUOe+ue/XhRgawooVVkJCNl46M+GztMTgiNWOZGoLVOZ4=";
constexpr const char* kRsa =
    "AAAAB3NzaC1yc2EAAAADAQABAAABgQChrbxwl+HldWK6XkJsLNRJmb5xcBCkRpbv7H6ajg4LA5XrqTwEvgl/"
    "vpneVUjNCTZ5+XAkCzi8JYgOwenwuXNN+hiLlflNDViC53H3zkJs8uPJV4f4ekJs+tl9/"
    "XsevJbtZNzdjLXT0vtsdSsBlc2DQLcArxc6XqZByIhHEC6smu/Mn29utiW7pZpbd2C2RTM+AY7hx+tXG/"
    "8JwoqdYboAqsR2Hhn+l+/M6J8mJjIQx5/"
    "Mznp05el5W9r9iA8MmHEqJr7U5TIY7HMPVSdzDdU2uyClywe+WSY3Q+BU3C0Lvl83vsYtxHFYJ9qtZzINWT+Ce+"
    "wOYfwu3/JT8YppiuAhrMKWCg8NaiCQ0PY7+dgisrQImtiLR66pviCM5IMfGlsvM+yZ+6B/"
    "AxUWzlqHpLr6HfezWvNNAWEnWkCDi4VwgXBAIdFZvT6vz+J52/"
    "NwbvyWWIseQjmXqWtqpG5S7gjVG7OAQdFrVCMrT9VvqqLltGxtIu3oD/zFoVJEeOa6uVE=";
constexpr const char* kEcdsa384 =
    "AAAAE2VjZHNhLXNoYTItbmlzdHAzODQAAAAIbmlzdHAzODQAAABhBEToIh2PsKze/wCpAjs+279yTG0Fc1xP+/"
    "wqHdB88Z8nZi25RoO9XBxiSegXD3PluBbfM0vB48pAH09n0DpW1ZGeiGvFE70lwd8ZeSKRl6wexOAfSHdwrMCMR0fy75rl"
    "hw==";
// ssh-keygen -lf
constexpr const char* kEd25519Fingerprint = "SHA256:dGDjLpchpdu1V+KiA76XdiPbG8axrqNCOSpumZPhx/4";
constexpr const char* kEcdsaFingerprint = "SHA256:Sg/ClVaYWmHalYHqwx9oLFAJPWYkyZQf8hiQJKmoH1k";
constexpr const char* kRsaFingerprint = "SHA256:6YmwqMyhLih4zRqZIhV/cWLbE74ubIEsHf2YanWa6dQ";
constexpr const char* kEcdsa384Fingerprint = "SHA256:sStk6VFuan6rt6rP9EpOKeYeFzu4xvt0vVjiBYU6N0o";

SshHostKey Key(const std::string& base64) {
  std::optional<std::string> blob = DecodeBase64(base64);
  REQUIRE(blob);
  std::optional<SshHostKey> key = ParseSshKeyBlob(*blob);
  REQUIRE(key);
  return *key;
}

std::string Line(const std::string& names, const std::string& type, const std::string& key) {
  return names + " " + type + " " + key + "\n";
}

TEST_CASE("keys read from their blobs print as ssh-keygen -lf prints them", "[known_hosts]") {
  struct Case {
    const char* base64;
    const char* type;
    int bits;
    const char* label;
    const char* fingerprint;
  };
  const Case cases[] = {
      {kEd25519, "ssh-ed25519", 256, "ED25519", kEd25519Fingerprint},
      {kEcdsa, "ecdsa-sha2-nistp256", 256, "ECDSA", kEcdsaFingerprint},
      {kEcdsa384, "ecdsa-sha2-nistp384", 384, "ECDSA", kEcdsa384Fingerprint},
      {kRsa, "ssh-rsa", 3072, "RSA", kRsaFingerprint},
  };
  for (const Case& c : cases) {
    const SshHostKey key = Key(c.base64);
    CHECK(key.type == c.type);
    CHECK(key.Bits() == c.bits);
    CHECK(key.Label() == c.label);
    CHECK(key.Fingerprint() == c.fingerprint);
    CHECK(key.Base64() == c.base64);
  }
}

TEST_CASE("plain, bracketed, listed and hashed names are found, other names are not",
          "[known_hosts]") {
  // Made by ssh-keygen -H from "example.com" and "[127.0.0.1]:2222".
  const std::string text =
      "# a comment\n\n   \n"
      "|1|ep/SAjNxq5N/EJqpNd8QFns6grk=|Bgo1cmX2PaVHCJgYkcA9Djwk2P4= ssh-ed25519 " +
      std::string(kEd25519) +
      "\n"
      "|1|yl4vMXfT9Tg0alpW1bNbY6iLkLs=|nLxcU3CHvr5IP+hkOXABFQJLDu4= ecdsa-sha2-nistp256 " +
      std::string(kEcdsa) + "\n" +
      Line("git.example.org,Mirror.Example.Org,10.0.0.1", "ssh-rsa", kRsa) +
      Line("[git.example.org]:2200", "ssh-ed25519", kEd25519);
  const KnownHostsFile file = ParseKnownHosts(text, "kh");
  CHECK(file.warnings.empty());
  REQUIRE(file.entries.size() == 4);
  CHECK(file.entries[0].line == 4);

  CHECK(EntriesFor(file, "example.com", 22).size() == 1);
  CHECK(EntriesFor(file, "EXAMPLE.com", 22).size() == 1);
  CHECK(EntriesFor(file, "example.com", 2222).empty());
  CHECK(EntriesFor(file, "127.0.0.1", 2222).size() == 1);
  CHECK(EntriesFor(file, "127.0.0.1", 22).empty());
  CHECK(EntriesFor(file, "mirror.example.org", 22).size() == 1);
  CHECK(EntriesFor(file, "10.0.0.1", 22).size() == 1);
  CHECK(EntriesFor(file, "git.example.org", 2200).front()->key.type == "ssh-ed25519");
  CHECK(EntriesFor(file, "git.example.org", 22).front()->key.type == "ssh-rsa");
  CHECK(EntriesFor(file, "example.org", 22).empty());
  CHECK(KnownHostsName("Host", 22) == "host");
  CHECK(KnownHostsName("host", 2222) == "[host]:2222");
}

TEST_CASE("unsupported and unreadable lines are skipped with their file and line",
          "[known_hosts]") {
  const std::string text = "@cert-authority *.example.com " + std::string("ssh-ed25519 ") +
                           kEd25519 + "\n" + Line("*.example.com", "ssh-ed25519", kEd25519) +
                           Line("!bad.example.com,good", "ssh-ed25519", kEd25519) +
                           Line("h?st", "ssh-ed25519", kEd25519) + "onlyname\n" +
                           "host ssh-ed25519 not*base64\n" + "host ssh-rsa " + kEd25519 + "\n" +
                           "|1|x|y ssh-ed25519 " + kEd25519 + "\n" + "@weird host ssh-ed25519 " +
                           kEd25519 + "\n" + "host ssh-ed25519 AAAA\n" +
                           Line("fine", "ssh-ed25519", kEd25519);
  const KnownHostsFile file = ParseKnownHosts(text, "/etc/kh");
  REQUIRE(file.entries.size() == 1);
  CHECK(file.entries[0].line == 11);
  REQUIRE(file.warnings.size() == 10);
  CHECK(file.warnings[0].starts_with("/etc/kh:1: @cert-authority"));
  CHECK(file.warnings[1].starts_with("/etc/kh:2: host patterns"));
  CHECK(file.warnings[2].starts_with("/etc/kh:3: host patterns"));
  CHECK(file.warnings[4].starts_with("/etc/kh:5: expected host names"));
  CHECK(file.warnings[5] == "/etc/kh:6: the key is not base64");
  CHECK(file.warnings[6].find("does not match the key, which is ssh-ed25519") != std::string::npos);
  CHECK(file.skipped_lines == std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  // A host named only by a skipped line is not in the file.
  CHECK(EntriesFor(file, "good", 22).empty());
}

TEST_CASE("any bytes parse without crashing", "[known_hosts]") {
  std::string noise;
  for (int i = 0; i < 4096; ++i) noise += static_cast<char>((i * 7919 + 13) % 256);
  const KnownHostsFile file = ParseKnownHosts(noise, "noise");
  CHECK(file.entries.empty());
  for (size_t cut = 0; cut < std::string(kRsa).size(); cut += 7) {
    (void)ParseKnownHosts("h ssh-rsa " + std::string(kRsa).substr(0, cut) + "\n", "cut");
    std::optional<std::string> blob = DecodeBase64(kRsa);
    REQUIRE(blob);
    if (std::optional<SshHostKey> k = ParseSshKeyBlob(blob->substr(0, cut))) (void)k->Bits();
  }
  CHECK(ParseKnownHosts("", "empty").entries.empty());
}

TEST_CASE("the check tells a match, an unknown host, other types, a changed and a revoked key",
          "[known_hosts]") {
  const SshHostKey ed = Key(kEd25519);
  const SshHostKey ec = Key(kEcdsa);
  const SshHostKey ec384 = Key(kEcdsa384);
  const std::string other_ed =
      "AAAAC3NzaC1lZDI1NTE5AAAAIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
  const KnownHostsFile file = ParseKnownHosts(
      Line("[h]:2222", "ecdsa-sha2-nistp256", kEcdsa) + Line("[h]:2222", "ssh-ed25519", kEd25519) +
          Line("only-ec", "ecdsa-sha2-nistp256", kEcdsa) + Line("moved", "ssh-ed25519", other_ed) +
          "@revoked elsewhere ecdsa-sha2-nistp384 " + kEcdsa384 + "\n",
      "/k");

  CHECK(CheckHostKey(file, "h", 2222, ed).verdict == HostKeyVerdict::kMatch);
  CHECK(CheckHostKey(file, "h", 2222, ec).verdict == HostKeyVerdict::kMatch);
  CHECK(CheckHostKey(file, "h", 22, ed).verdict == HostKeyVerdict::kNotInFile);

  const HostKeyCheck other = CheckHostKey(file, "only-ec", 22, ed);
  CHECK(other.verdict == HostKeyVerdict::kOtherTypes);
  const std::string b = HostKeyRefusal(file, "only-ec", 22, ed, other);
  CHECK(b.find("only with ecdsa-sha2-nistp256 " + std::string(kEcdsaFingerprint) + " (line 3)") !=
        std::string::npos);
  CHECK(b.find("offered ssh-ed25519 " + std::string(kEd25519Fingerprint)) != std::string::npos);
  CHECK(b.find("ray-gitops known-hosts scan only-ec") != std::string::npos);

  const HostKeyCheck changed = CheckHostKey(file, "moved", 22, ed);
  CHECK(changed.verdict == HostKeyVerdict::kChanged);
  const std::string c = HostKeyRefusal(file, "moved", 22, ed, changed);
  CHECK(c.find("CHANGED") != std::string::npos);
  CHECK(c.find("/k line 4") != std::string::npos);
  CHECK(c.find(kEd25519Fingerprint) != std::string::npos);
  CHECK(c.find("intercept") != std::string::npos);

  const HostKeyCheck revoked = CheckHostKey(file, "anyone", 22, ec384);
  CHECK(revoked.verdict == HostKeyVerdict::kRevoked);
  const std::string r = HostKeyRefusal(file, "anyone", 22, ec384, revoked);
  CHECK(r.find("REVOKED") != std::string::npos);
  CHECK(r.find("/k line 5") != std::string::npos);
  CHECK(r.find(kEcdsa384Fingerprint) != std::string::npos);

  const HostKeyCheck unknown = CheckHostKey(file, "new", 2200, ed);
  const std::string a = HostKeyRefusal(file, "new", 2200, ed, unknown);
  CHECK(a.find("[new]:2200 is not in the known_hosts file /k") != std::string::npos);
  CHECK(a.find("ray-gitops known-hosts scan new:2200") != std::string::npos);
  CHECK(a.find("line 5 of the file were skipped") == std::string::npos);
}

TEST_CASE("a missing file says so in the not-known message", "[known_hosts]") {
  const KnownHostsFile file = ReadKnownHosts("/nonexistent/known_hosts");
  CHECK_FALSE(file.exists);
  const SshHostKey ed = Key(kEd25519);
  const std::string a = HostKeyRefusal(file, "h", 22, ed, CheckHostKey(file, "h", 22, ed));
  CHECK(a.find("cannot be read") != std::string::npos);
  CHECK(a.find(kEd25519Fingerprint) != std::string::npos);
}

}  // namespace
}  // namespace rg::adapters
