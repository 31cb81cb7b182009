// oci-image packs a root filesystem folder into an OCI image layout: one layer, the image's
// configuration (entrypoint, user, environment, labels) and an index naming the image. No
// container daemon is involved; go-containerregistry writes the layout, which skopeo, crane,
// podman and `docker load` (as an archive) take as it is.
//
//	oci-image -rootfs DIR -out LAYOUT -name wasq -tag 0.1.0 -entrypoint /usr/local/bin/wasq \
//	          -user 65532:65532 -env K=V -label K=V ...
//
// The layer is reproducible: files in name order, owned by root, every time stamp the epoch.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// pairs is a repeatable -flag K=V.
type pairs []string

func (p *pairs) String() string     { return strings.Join(*p, ",") }
func (p *pairs) Set(s string) error { *p = append(*p, s); return nil }

func main() {
	rootfs := flag.String("rootfs", "", "the folder that becomes the image's root filesystem")
	out := flag.String("out", "", "the OCI image layout to write (a folder; replaced)")
	name := flag.String("name", "wasq", "the image's name, recorded in the layout's index")
	tag := flag.String("tag", "", "the image's tag, recorded in the layout's index")
	entrypoint := flag.String("entrypoint", "", "the program the image runs")
	user := flag.String("user", "65532:65532", "the user and group it runs as")
	arch := flag.String("arch", runtime.GOARCH, "the architecture of the programs in rootfs")
	var env, labels pairs
	flag.Var(&env, "env", "an environment variable K=V (repeatable)")
	flag.Var(&labels, "label", "a label K=V (repeatable)")
	flag.Parse()
	if *rootfs == "" || *out == "" || *tag == "" || *entrypoint == "" {
		fmt.Fprintln(os.Stderr, "oci-image: -rootfs, -out, -tag and -entrypoint are required")
		flag.Usage()
		os.Exit(2)
	}
	if err := pack(*rootfs, *out, *name, *tag, *entrypoint, *user, *arch, env, labels); err != nil {
		fmt.Fprintln(os.Stderr, "oci-image:", err)
		os.Exit(1)
	}
}

func pack(rootfs, out, name, tag, entrypoint, user, arch string, env, labels pairs) error {
	layerTar, err := tarTree(rootfs)
	if err != nil {
		return fmt.Errorf("packing %s: %w", rootfs, err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cfg.Config.Entrypoint = []string{entrypoint}
	cfg.Config.User = user
	cfg.Config.WorkingDir = "/"
	cfg.Config.Env = env
	cfg.Config.Labels = map[string]string{}
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return fmt.Errorf("label %q is not K=V", l)
		}
		cfg.Config.Labels[k] = v
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	path, err := layout.Write(out, empty.Index)
	if err != nil {
		return err
	}
	// The tag as the OCI spec has it (skopeo's oci:LAYOUT:TAG), the full name as containerd
	// and `docker load` read it.
	return path.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": tag,
		"io.containerd.image.name":          name + ":" + tag,
	}))
}

// tarTree is the folder as an uncompressed tar stream, reproducibly.
func tarTree(root string) ([]byte, error) {
	var paths []string
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	for _, p := range paths {
		info, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return nil, err
			}
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(root, p)
		h.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			h.Name += "/"
		}
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
		h.ModTime, h.AccessTime, h.ChangeTime = time.Unix(0, 0), time.Time{}, time.Time{}
		h.Format = tar.FormatPAX
		if err := w.WriteHeader(h); err != nil {
			return nil, err
		}
		if info.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return nil, err
			}
			_, err = io.Copy(w, f)
			f.Close()
			if err != nil {
				return nil, err
			}
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
