# Installs missing Debian packages and Python modules (sourced by scripts).

# ensure_debs pkg...: installs the packages that are not installed yet.
ensure_debs() {
    local missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    ((${#missing[@]})) || return 0
    echo "Installing ${missing[*]}..." >&2
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# ensure_python_modules module=pip-name...: pip-installs modules python3 cannot import.
ensure_python_modules() {
    local missing=()
    for spec in "$@"; do
        python3 -c "import ${spec%%=*}" 2>/dev/null || missing+=("${spec#*=}")
    done
    ((${#missing[@]})) || return 0
    echo "Installing Python modules ${missing[*]}..." >&2
    python3 -m pip --version >/dev/null 2>&1 || ensure_debs python3-pip
    python3 -m pip install -q "${missing[@]}" 2>/dev/null \
        || python3 -m pip install -q --break-system-packages "${missing[@]}"
}
