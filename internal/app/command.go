/*
Copyright The Kubeocean Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package app

import (
	"errors"
	"fmt"
	"io"
	"os/signal"
	"sort"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"github.com/kubeocean/kubeocean/internal/version"
)

// Exit codes of Command.Execute.
const (
	ExitOK      = 0
	ExitFailed  = 1 // the binary ran and stopped with an error
	ExitBadArgs = 2 // the command line is wrong; nothing ran
)

// Command is the command line of a Kubeocean binary: the shared flags of
// Options and the binary's own, grouped in sections for --help, one
// validation, then the binary's controllers until SIGINT or SIGTERM.
type Command struct {
	Options *Options
	// Short is the one-line description --help starts with.
	Short string
	// AddFlags registers the binary's own flags in their sections.
	AddFlags func(fss *cliflag.NamedFlagSets)
	// Validate checks the binary's own flags once they are parsed; its
	// errors are reported like flag errors.
	Validate func() error
	// Setup returns the binary's controllers; called once the flags are
	// valid.
	Setup func() Setup
}

// usageError marks a wrong command line.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// Execute runs the command with args (os.Args[1:]) and returns the process
// exit code. Help and --version go to stdout, errors to stderr.
func (c Command) Execute(args []string, stdout, stderr io.Writer) int {
	cmd := c.cobra()
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	err := cmd.Execute()
	logs.FlushLogs()
	var usage usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "Error: %v\nRun '%s --help' for the flags.\n", err, c.Options.Component)
		return ExitBadArgs
	default:
		klog.Background().Error(err, "Stopped with an error")
		logs.FlushLogs()
		return ExitFailed
	}
}

func (c Command) cobra() *cobra.Command {
	var fss cliflag.NamedFlagSets
	var showVersion bool
	fss.FlagSet(SectionGeneric).BoolVar(&showVersion, "version", false, "Print the version and exit.")
	c.Options.AddFlags(&fss)
	if c.AddFlags != nil {
		c.AddFlags(&fss)
	}
	cmd := &cobra.Command{
		Use:   c.Options.Component,
		Short: c.Short,
		Long:  c.Short,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unexpected argument %q: %s takes flags only", args[0], c.Options.Component)}
			}
			return nil
		},
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if showVersion {
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", c.Options.Component, version.Get())
				return nil
			}
			if err := c.validate(); err != nil {
				return usageError{err}
			}
			logs.InitLogs()
			logStart(klog.Background(), c.Options.Component, cmd.Flags())
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			ctx = klog.NewContext(ctx, klog.Background())
			return Run(ctx, c.Options, c.Setup())
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	// cobra's own help flag, in the Generic section with --version.
	fss.FlagSet(SectionGeneric).BoolP("help", "h", false, "Print this help and exit.")
	for _, fs := range fss.FlagSets {
		cmd.Flags().AddFlagSet(fs)
	}
	// Zero columns: one line per flag, for grep and narrow terminals alike.
	cliflag.SetUsageAndHelpFunc(cmd, fss, 0)
	return cmd
}

// validate checks every flag at once, so one run names every mistake.
func (c Command) validate() error {
	var errs []error
	if err := logsapi.ValidateAndApply(c.Options.Logging, nil); err != nil {
		errs = append(errs, err)
	}
	if err := c.Options.Serving.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Validate != nil {
		if err := c.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// logStart logs the version and every flag's effective value, so a log
// alone tells what ran and how.
func logStart(logger klog.Logger, component string, fs *pflag.FlagSet) {
	var settings []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" || f.Name == "version" {
			return
		}
		settings = append(settings, "--"+f.Name+"="+f.Value.String())
	})
	sort.Strings(settings)
	v := version.Get()
	logger.Info("Starting", "component", component, "version", v.GitVersion, "commit", v.GitCommit,
		"goVersion", v.GoVersion, "settings", settings)
}

// Flags returns the command's flags as the binary parses them, for tests
// that check arguments written elsewhere (manifests, templates).
func (c Command) Flags() *pflag.FlagSet { return c.cobra().Flags() }
