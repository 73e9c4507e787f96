// Command orted is the prsh daemon that runs on every node of a job. It is
// started by its parent in the spawn tree (mpirun or another orted) with
//
//	orted --parent tcp://IP:PORT --id N --node NAME [--log-level L]
//
// and reads the job's secret as the first line of its standard input, which
// then stays open: when it closes, the parent is gone and orted ends
// everything it started. The rest of the job comes from the parent over the
// authenticated connection.
package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/urfave/cli/v2"

	"prsh/daemon"
	"prsh/errmgr"
	"prsh/internal/profile"
	"prsh/transport"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == errmgr.GuardArg {
		errmgr.RunGuard(os.Args[2:])
	}
	app := &cli.App{
		Name:            "orted",
		Usage:           "the prsh daemon; started by mpirun, not by hand",
		HideHelpCommand: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "parent", Required: true, Usage: "contact address of the parent daemon"},
			&cli.IntFlag{Name: "id", Required: true, Usage: "this daemon's id in the job"},
			&cli.StringFlag{Name: "node", Required: true, Usage: "this node's name as the job knows it"},
			&cli.StringFlag{Name: "bind", Usage: "IP address to listen on (default: the address the node was reached on)"},
			&cli.StringFlag{Name: "log-level", Value: "warn", Usage: "trace, debug, info, warn, error or off"},
		},
		Action: run,
	}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "orted: %v\n", err)
		os.Exit(errmgr.StatusFailed)
	}
}

func run(c *cli.Context) error {
	// Terminal signals are mpirun's to handle; it tells the daemons.
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGTSTP, syscall.SIGQUIT, syscall.SIGPIPE)
	stdin := bufio.NewReader(os.Stdin)
	secret, err := readSecret(stdin)
	if err != nil {
		return err
	}
	node := c.String("node")
	log := hclog.New(&hclog.LoggerOptions{
		Name: "orted." + node, Level: hclog.LevelFromString(c.String("log-level")), Output: os.Stderr,
	})
	bind := c.String("bind")
	if bind == "" {
		bind = daemon.NodeIP(c.String("parent"))
	}
	profile.LimitMemory()
	stopProfile := profile.Start("orted")
	status, err := daemon.Run(context.Background(), daemon.Config{
		ID: c.Int("id"), Node: node, ParentAddr: c.String("parent"),
		Secret: secret, Bind: bind, Log: log, Lifeline: stdin,
	})
	stopProfile()
	if err != nil {
		fmt.Fprintf(os.Stderr, "orted: %v\n", err)
	}
	os.Exit(status)
	return nil
}

func readSecret(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("reading the job secret from stdin: %w", err)
	}
	secret, err := hex.DecodeString(strings.TrimSpace(line))
	if err != nil || len(secret) != transport.SecretSize {
		return nil, fmt.Errorf("stdin does not start with a job secret")
	}
	return secret, nil
}
