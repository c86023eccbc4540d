# Shared by up.sh, down.sh and exec.sh (sourced, not run): the names and
# addresses of configs/default.toml, or those of a `bloatbox run --name NAME`
# link when BB_NAME is set (namespaces and TAPs NAMEl / NAMEr).

if [ -n "${BB_NAME:-}" ]; then
  LEFT_NS="${BB_NAME}l";  LEFT_TAP="${BB_NAME}l"
  RIGHT_NS="${BB_NAME}r"; RIGHT_TAP="${BB_NAME}r"
  CONTROL="/run/bloatbox/${BB_NAME}.sock"
else
  LEFT_NS=bb-left;  LEFT_TAP=bbl0
  RIGHT_NS=bb-right; RIGHT_TAP=bbr0
  CONTROL=/run/bloatbox/bb-left.sock
fi
LEFT_V4=10.77.0.1;   RIGHT_V4=10.77.0.2
LEFT_V6=fd00:77::1;  RIGHT_V6=fd00:77::2
MTU=1500;            TXQUEUELEN=128

need_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "$0: needs root (network namespaces and TAPs): run it with sudo" >&2
    exit 1
  fi
}

ns_exists() { [ -e "/run/netns/$1" ]; }
