// Command etcd is etcd's server, built at the version go.mod pins (etcd's own main package lives in
// a module whose go.mod replaces its siblings by path, so it cannot be required; this is its body).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
