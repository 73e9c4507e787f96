package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"prsh/testbed"
)

func upCommand(std stdio) *cli.Command {
	return &cli.Command{
		Name:   "up",
		Usage:  "serve a cluster until SIGINT, SIGTERM or SIGHUP",
		Flags:  clusterFlags(),
		Action: func(c *cli.Context) error { return upAction(c, std) },
	}
}

func upAction(c *cli.Context, std stdio) error {
	if c.Args().Len() > 0 {
		return fmt.Errorf("up: unexpected arguments %q (did you mean testbed run?)", c.Args().Slice())
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	cfg, err := configFromFlags(c, std.err)
	if err != nil {
		return err
	}
	cl, err := testbed.Start(cfg)
	if err != nil {
		return err
	}
	defer cl.Close()
	fmt.Fprintf(std.err, "testbed: %d nodes up, files in %s\n", len(cl.Nodes()), cl.Dir())
	for _, kv := range cl.Env() {
		fmt.Fprintf(std.err, "testbed:   %s\n", kv)
	}
	fmt.Fprintf(std.err, "testbed: try: ssh -F %s %s hostname\n", cl.SSHConfigPath(), cl.Nodes()[0].Name)
	fmt.Fprintf(std.err, "testbed: stop with Ctrl-C (leftover processes are then killed)\n")

	sig := <-sigs
	statusf(c, std.err)("testbed: %v: shutting down", sig)
	reportLeftovers(std.err, cl.Leftovers())
	return cl.Close()
}
