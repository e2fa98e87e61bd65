# Sourced by scripts/test.sh: system tools the emulated-internet tests need (iptables; `ip` and
# `tc` come with iproute2). Installed only as root where apt-get exists; elsewhere those tests
# skip with one line saying why.
if [ "$(id -u)" = "0" ] && ! command -v iptables >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  echo "[setup] installing iptables (for the emulated-internet tests)"
  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iptables >/dev/null 2>&1 \
    || { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iptables >/dev/null 2>&1; }; } \
    || echo "[setup] could not install iptables: the emulated-internet tests will skip"
fi
