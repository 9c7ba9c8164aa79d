package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

const modulePath = "github.com/llmgw/gateway"

// child is a process this command started. stop ends it; calling it again, or after the process ended, is a no-op.
type child struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.Closer // a helper's stdin (the mock's, the floor proxy's): closing it asks the helper to exit
	exited chan struct{}
}

func startChild(name string, cmd *exec.Cmd) (*child, error) {
	setDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

func (c *child) running() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// stop asks the child to end (the gateway gets SIGTERM and flushes its request log) and kills it after 5 s.
func (c *child) stop() {
	if c.stdin != nil {
		c.stdin.Close()
	}
	if !c.running() {
		return
	}
	if err := c.cmd.Process.Signal(terminateSignal); err != nil {
		c.cmd.Process.Kill()
	}
	select {
	case <-c.exited:
	case <-time.After(5 * time.Second):
		c.cmd.Process.Kill()
		<-c.exited
	}
}

// startMock runs this binary as the mock upstream and returns it with its address.
func startMock(ctx context.Context, chunks int, logFile *os.File) (*child, string, error) {
	return startSelf(ctx, "mock upstream", logFile, mockEnv+"=1", mockChunksEnv+"="+strconv.Itoa(chunks))
}

// startFloor runs this binary as the floor proxy of the mock at mockAddr and returns it with its address.
func startFloor(ctx context.Context, mockAddr string, logFile *os.File) (*child, string, error) {
	return startSelf(ctx, "floor proxy", logFile, floorEnv+"="+mockAddr)
}

// startSelf runs this binary with extra environment as a helper that prints "listening <addr>" on stdout once
// it serves, and exits when its stdin closes; it returns the helper with that address.
func startSelf(ctx context.Context, name string, logFile *os.File, env ...string) (*child, string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, "", err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, "", err
	}
	defer outR.Close()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, logFile
	c, err := startChild(name, cmd)
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		return nil, "", err
	}
	c.stdin = inW
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(outR).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		addr, ok := strings.CutPrefix(strings.TrimSpace(s), "listening ")
		if !ok || !strings.HasPrefix(addr, "127.0.0.1:") {
			c.stop()
			return nil, "", fmt.Errorf("%s did not start (see %s)", name, logFile.Name())
		}
		return c, addr, nil
	case <-time.After(30 * time.Second):
		c.stop()
		return nil, "", fmt.Errorf("%s did not start within 30 s", name)
	case <-ctx.Done():
		c.stop()
		return nil, "", ctx.Err()
	}
}

var listeningLine = regexp.MustCompile(`msg="gateway listening" addr=http://(127\.0\.0\.1:\d+)`)

// startGateway runs the gateway binary on a free loopback port with its output in logPath, and waits until it
// listens: the log line names the port it got. Loading a Go wasm plugin at start can take many seconds.
func startGateway(ctx context.Context, bin, dataDir, bootstrap, logPath string, extra ...string) (*child, string, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, "", err
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd := exec.Command(bin, append([]string{"--listen", "127.0.0.1:0", "--data", dataDir, "--bootstrap", bootstrap}, extra...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	c, err := startChild("gateway", cmd)
	if err != nil {
		return nil, "", err
	}
	deadline := time.After(3 * time.Minute)
	for {
		if m := listeningLine.FindSubmatch(readHead(logPath, 1<<20)); m != nil {
			return c, string(m[1]), nil
		}
		select {
		case <-c.exited:
			return nil, "", fmt.Errorf("the gateway exited before listening:\n%s", readHead(logPath, 4<<10))
		case <-deadline:
			c.stop()
			return nil, "", fmt.Errorf("the gateway did not listen within 3 minutes (log: %s)", logPath)
		case <-ctx.Done():
			c.stop()
			return nil, "", ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// readHead returns up to n bytes from the start of a file (nothing when it cannot be read).
func readHead(path string, n int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, n))
	return b
}

// findRoot returns the gateway repository's root: the nearest folder up from the working one whose go.mod
// declares the gateway's module.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			bytes.HasPrefix(bytes.TrimSpace(b), []byte("module "+modulePath+"\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the gateway's repository: run it from there (go run ./cmd/loadbench), or pass -gateway")
		}
		dir = parent
	}
}

// goBuild runs `go build` in the repository with extra environment, its output kept for the error.
func goBuild(ctx context.Context, root string, env []string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", append([]string{"build"}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("go build %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// pluginDir is the example plugin the guarded scenario runs, as the README's walkthrough does.
const pluginDir = "examples/denylist"

// buildPlugin builds examples/denylist as a wasm guest, or returns the one an earlier run built from the same
// sources: Go guests take a while to build. Built modules are kept in the system's temp folder.
func buildPlugin(ctx context.Context, root string) (string, error) {
	sum, err := pluginSourceHash(root)
	if err != nil {
		return "", err
	}
	cacheDir := filepath.Join(os.TempDir(), "gateway-loadbench")
	path := filepath.Join(cacheDir, "denylist-"+sum[:16]+".wasm")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", err
	}
	tmp := path + ".tmp" + strconv.Itoa(os.Getpid())
	defer os.Remove(tmp)
	if err := goBuild(ctx, root, []string{"GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0"},
		"-buildmode=c-shared", "-o", tmp, "./"+pluginDir); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}

// pluginSourceHash hashes what the guest is built from: the Go toolchain, go.mod and go.sum, the example, the
// guest SDK and the ABI it shares with the host.
func pluginSourceHash(root string) (string, error) {
	h := sha256.New()
	io.WriteString(h, runtime.Version()+"\n")
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	for _, dir := range []string{pluginDir, "sdk-guest", "hostapi"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%s %d\n", p[len(root):], len(b))
			h.Write(b)
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// procSample is what /proc says of a process at one moment.
type procSample struct {
	cpu   time.Duration // user + system time so far
	rssKB int64
	ok    bool // false off Linux, or when /proc could not be read
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on every Linux the kernel ABI allows.
const clockTicks = 100

// sampleProc reads a process's CPU time (/proc/<pid>/stat: utime and stime) and resident memory
// (/proc/<pid>/status: VmRSS).
func sampleProc(pid int) procSample {
	if runtime.GOOS != "linux" {
		return procSample{}
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procSample{}
	}
	// The command name, in parentheses, may hold spaces: fields are counted after its closing parenthesis,
	// where field 3 (state) comes first, so utime (14) and stime (15) are the 12th and 13th.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return procSample{}
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 13 {
		return procSample{}
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return procSample{}
	}
	s := procSample{cpu: time.Duration(utime+stime) * time.Second / clockTicks, ok: true}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return procSample{}
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			s.rssKB, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return s
}
