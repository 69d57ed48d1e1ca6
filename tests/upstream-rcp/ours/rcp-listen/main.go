// Ours, not upstream's (see ../../PROVENANCE.md): upstream has no listener
// command. Its one listener is netlaunch's gRPC mode
// (tools/pkg/netlaunch/netlaunch.go): client.ListenAndAccept with
// tlscerts.ServerCertProvider, then the one connection from ConnChan
// becomes the only transport of a gRPC client
// (tridentgrpc.NewTridentClientFromNetworkConnection). This does the same,
// except that the gRPC client is the test's: the accepted connection is
// offered on a Unix socket, and the first client of that socket gets it.
//
// stdout carries one line, "listening PORT", once both listeners are up.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/sirupsen/logrus"

	"tridenttools/pkg/rcp/client"
	"tridenttools/pkg/rcp/tlscerts"
)

func main() {
	port := flag.Uint("port", 0, "TCP port of the RCP listener (0: any free port)")
	socket := flag.String("socket", "", "Unix socket on which the accepted connection is offered")
	flag.Parse()
	if *socket == "" || *port > 65535 {
		logrus.Fatal("usage: rcp-listen [--port PORT] --socket PATH")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// As netlaunch: upstream's listener with the embedded server certificate.
	rcpListener, err := client.ListenAndAccept(ctx, tlscerts.ServerCertProvider, uint16(*port))
	if err != nil {
		logrus.Fatalf("failed to start RCP listener: %v", err)
	}
	defer rcpListener.Close()

	local, err := net.Listen("unix", *socket)
	if err != nil {
		logrus.Fatalf("failed to listen on %s: %v", *socket, err)
	}
	defer local.Close()
	// Accept below does not watch the context: closing the socket ends it.
	go func() { <-ctx.Done(); local.Close() }()
	fmt.Printf("listening %d\n", rcpListener.Port)

	logrus.Info("Waiting for RCP connection...")
	var conn net.Conn
	select {
	case <-ctx.Done():
		return
	case accepted, ok := <-rcpListener.ConnChan:
		if !ok {
			logrus.Fatal("RCP listener channel closed")
		}
		conn = accepted
	}
	defer conn.Close()
	logrus.Infof("Accepted RCP connection from %s", conn.RemoteAddr())

	// netlaunch's gRPC client would start here; the test's connects instead.
	grpcClient, err := local.Accept()
	if err != nil && ctx.Err() != nil {
		return
	} else if err != nil {
		logrus.Fatalf("failed to accept the gRPC client: %v", err)
	}
	defer grpcClient.Close()

	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(conn, grpcClient); done <- struct{}{} }()
	go func() { _, _ = io.Copy(grpcClient, conn); done <- struct{}{} }()
	select {
	case <-done:
		logrus.Info("RCP connection closed")
	case <-ctx.Done():
	}
}
