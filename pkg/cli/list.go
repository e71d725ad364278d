package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lightllm-go/lightllm/pkg/hub"
)

func newListCmd() *cobra.Command {
	var cacheDir string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the models in the Hugging Face cache",
		Long: `List cached models (also those downloaded by Python tools): repository,
revision, commit, file count and size on disk of each cached snapshot.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir := cacheDir
			if dir == "" {
				dir = hub.CacheDirFromEnv(nil)
			}
			l, err := hub.List(dir)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if len(l.Models) == 0 {
				fmt.Fprintf(out, "no models cached in %s (download one with `lightllm pull ORG/NAME`)\n", dir)
			} else {
				tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "REPO\tREVISION\tCOMMIT\tFILES\tSIZE")
				for _, m := range l.Models {
					rev := strings.Join(m.Refs, ",")
					if rev == "" {
						rev = "(detached)"
					}
					fmt.Fprintf(tw, "%s\t%s\t%.12s\t%d\t%s\n", m.Repo, rev, m.Commit, m.Files, hub.FormatBytes(m.Size))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				var total int64
				for _, n := range l.RepoSize {
					total += n
				}
				fmt.Fprintf(out, "%d snapshot(s) of %d repo(s), %s on disk in %s\n", len(l.Models), len(l.RepoSize), hub.FormatBytes(total), dir)
			}
			if l.Incomplete > 0 {
				fmt.Fprintf(out, "%s in unfinished downloads (run `lightllm pull` again to resume)\n", hub.FormatBytes(l.Incomplete))
			}
			for _, w := range l.Warnings {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: skipped %s\n", w)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&cacheDir, "cache_dir", "", "hub cache folder (default $HF_HUB_CACHE or $HF_HOME/hub)")
	return cmd
}
