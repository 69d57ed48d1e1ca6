// Ours, not upstream's: upstream's tools/go.mod names every tool's
// dependencies (libvirt, grpc, sqlite, ...); this one names only what the
// vendored RCP packages, cmd/rcp-agent, storm/utils/cmd and our
// ours/rcp-listen import. scripts/build-upstream-rcp.sh builds it offline
// with -mod=vendor from Debian's Go library packages (/usr/share/gocode),
// so no module is ever downloaded: the versions below are those of Debian
// trixie's packages when this was written, and Go only checks that they
// match vendor/modules.txt, which the script writes from this file.
module tridenttools

go 1.24

require (
	github.com/alecthomas/kong v0.9.0
	github.com/sirupsen/logrus v1.9.0
	gopkg.in/yaml.v3 v3.0.1
)

require golang.org/x/sys v0.22.0 // indirect
