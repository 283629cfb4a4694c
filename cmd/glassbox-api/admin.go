package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// adminCommand is one `glassbox-api admin` subcommand: it declares its
// flags, then runs against the opened store and returns what to print.
type adminCommand struct {
	usage string
	flags func(fs *flag.FlagSet, in adminInput) func(ctx context.Context, s *controlplane.Store) (any, error)
}

// adminInput is where secrets come from: standard input or the environment,
// never the command line, which other users see in ps and shells keep in
// their history.
type adminInput struct {
	stdin  io.Reader
	getenv func(string) string
}

// SecretKeyEnv names the variable a chosen secret key may come from.
const SecretKeyEnv = "GLASSBOX_ADMIN_SECRET_KEY" //nolint:gosec // a variable name, not a secret

// secretKey reads a chosen secret: the first line of standard input when
// fromStdin, else SecretKeyEnv; empty means generate one.
func (in adminInput) secretKey(fromStdin bool) (string, error) {
	if !fromStdin {
		return in.getenv(SecretKeyEnv), nil
	}
	line, err := bufio.NewReader(io.LimitReader(in.stdin, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the secret key from standard input: %w", err)
	}
	if line = strings.TrimSpace(line); line == "" {
		return "", errors.New("--secret-key-stdin: standard input holds no secret key")
	}
	return line, nil
}

var adminCommands = map[string]adminCommand{
	"create-org": {
		usage: "--name NAME [--id ID]",
		flags: func(fs *flag.FlagSet, in adminInput) func(context.Context, *controlplane.Store) (any, error) {
			id := fs.String("id", "", "organization id (generated when empty)")
			name := fs.String("name", "", "organization name")
			return func(ctx context.Context, s *controlplane.Store) (any, error) {
				org, err := s.CreateOrganization(ctx, *id, *name)
				if err != nil {
					return nil, err
				}
				return organizationOut{ID: org.ID, Name: org.Name, CreatedAt: org.CreatedAt}, nil
			}
		},
	},
	"create-project": {
		usage: "--org ORG --name NAME [--id ID] [--retention-days N]",
		flags: func(fs *flag.FlagSet, in adminInput) func(context.Context, *controlplane.Store) (any, error) {
			org := fs.String("org", "", "organization id")
			id := fs.String("id", "", "project id (generated when empty)")
			name := fs.String("name", "", "project name")
			retention := fs.Int("retention-days", 0, "days to keep data (0 keeps it without limit)")
			return func(ctx context.Context, s *controlplane.Store) (any, error) {
				p, err := s.CreateProject(ctx, *org, controlplane.NewProject{ID: *id, Name: *name, RetentionDays: *retention})
				if err != nil {
					return nil, err
				}
				return projectOut(p, nil), nil
			}
		},
	},
	"create-project-key": {
		usage: "--org ORG --project PROJECT [--note NOTE] [--public-key PK --secret-key-stdin]",
		flags: func(fs *flag.FlagSet, in adminInput) func(context.Context, *controlplane.Store) (any, error) {
			return createKey(fs, in, true)
		},
	},
	"create-org-key": {
		usage: "--org ORG [--note NOTE] [--public-key PK --secret-key-stdin]",
		flags: func(fs *flag.FlagSet, in adminInput) func(context.Context, *controlplane.Store) (any, error) {
			return createKey(fs, in, false)
		},
	},
	"list": {
		usage: "[--org ORG]",
		flags: func(fs *flag.FlagSet, in adminInput) func(context.Context, *controlplane.Store) (any, error) {
			org := fs.String("org", "", "organization id (every organization when empty)")
			return func(ctx context.Context, s *controlplane.Store) (any, error) {
				if *org == "" {
					return listOrganizations(ctx, s)
				}
				o, err := s.GetOrganization(ctx, *org)
				if err != nil {
					return nil, err
				}
				return listOrganization(ctx, s, o)
			}
		},
	},
	"revoke": {
		usage: "--org ORG [--project PROJECT] --key KEY_ID",
		flags: func(fs *flag.FlagSet, in adminInput) func(context.Context, *controlplane.Store) (any, error) {
			org := fs.String("org", "", "organization id")
			project := fs.String("project", "", "project id; empty for an organization key")
			key := fs.String("key", "", "API key id (see list)")
			return func(ctx context.Context, s *controlplane.Store) (any, error) {
				if err := s.RevokeAPIKey(ctx, *org, *project, *key); err != nil {
					return nil, err
				}
				return map[string]any{"revoked": *key}, nil
			}
		},
	},
}

func createKey(fs *flag.FlagSet, in adminInput, forProject bool) func(context.Context, *controlplane.Store) (any, error) {
	org := fs.String("org", "", "organization id")
	project := new(string)
	if forProject {
		project = fs.String("project", "", "project id")
	}
	note := fs.String("note", "", "note shown in key lists")
	public := fs.String("public-key", "", "chosen public key pk-lf-... (generated when empty)")
	fromStdin := fs.Bool("secret-key-stdin", false, "read the chosen secret key sk-lf-... from standard input (else from "+
		SecretKeyEnv+"; generated when neither holds one)")
	return func(ctx context.Context, s *controlplane.Store) (any, error) {
		if forProject && *project == "" {
			return nil, errors.New("--project is required")
		}
		secret, err := in.secretKey(*fromStdin)
		if err != nil {
			return nil, err
		}
		k, sk, err := s.CreateAPIKey(ctx, *org, *project, controlplane.NewAPIKey{Note: *note, PublicKey: *public, SecretKey: secret})
		if err != nil {
			return nil, err
		}
		out := keyOut(k)
		out.SecretKey = sk
		return out, nil
	}
}

type organizationOut struct {
	ID        string        `json:"id"`
	Name      string        `json:"name"`
	CreatedAt time.Time     `json:"createdAt"`
	Projects  []projectJSON `json:"projects,omitempty"`
	APIKeys   []keyJSON     `json:"apiKeys,omitempty"`
}

type projectJSON struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	RetentionDays int       `json:"retentionDays,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	APIKeys       []keyJSON `json:"apiKeys,omitempty"`
}

type keyJSON struct {
	ID               string     `json:"id"`
	Scope            string     `json:"scope"`
	PublicKey        string     `json:"publicKey"`
	SecretKey        string     `json:"secretKey,omitempty"`
	DisplaySecretKey string     `json:"displaySecretKey"`
	Note             string     `json:"note,omitempty"`
	CreatedAt        time.Time  `json:"createdAt"`
	LastUsedAt       *time.Time `json:"lastUsedAt,omitempty"`
}

func projectOut(p controlplane.Project, keys []controlplane.APIKey) projectJSON {
	out := projectJSON{ID: p.ID, Name: p.Name, RetentionDays: p.RetentionDays, CreatedAt: p.CreatedAt}
	for _, k := range keys {
		out.APIKeys = append(out.APIKeys, keyOut(k))
	}
	return out
}

func keyOut(k controlplane.APIKey) keyJSON {
	out := keyJSON{
		ID: k.ID, Scope: string(k.Scope), PublicKey: k.PublicKey, DisplaySecretKey: k.DisplaySecret,
		Note: k.Note, CreatedAt: k.CreatedAt,
	}
	if !k.LastUsedAt.IsZero() {
		out.LastUsedAt = &k.LastUsedAt
	}
	return out
}

// organizationsOut is the listing of every organization.
type organizationsOut struct {
	Organizations []organizationOut `json:"organizations"`
}

// listOrganizations gathers every organization, by name, each with its
// projects and all keys: what an operator needs to find a lost key's owner.
func listOrganizations(ctx context.Context, s *controlplane.Store) (organizationsOut, error) {
	orgs, err := s.ListOrganizations(ctx)
	if err != nil {
		return organizationsOut{}, err
	}
	out := organizationsOut{Organizations: make([]organizationOut, 0, len(orgs))}
	for _, org := range orgs {
		o, err := listOrganization(ctx, s, org)
		if err != nil {
			return organizationsOut{}, err
		}
		out.Organizations = append(out.Organizations, o)
	}
	return out, nil
}

// listOrganization gathers an organization with its projects and all keys.
func listOrganization(ctx context.Context, s *controlplane.Store, org controlplane.Organization) (organizationOut, error) {
	out := organizationOut{ID: org.ID, Name: org.Name, CreatedAt: org.CreatedAt}
	orgKeys, err := s.ListAPIKeys(ctx, org.ID, "")
	if err != nil {
		return organizationOut{}, err
	}
	for _, k := range orgKeys {
		out.APIKeys = append(out.APIKeys, keyOut(k))
	}
	projects, err := s.ListProjects(ctx, org.ID)
	if err != nil {
		return organizationOut{}, err
	}
	for _, p := range projects {
		keys, err := s.ListAPIKeys(ctx, org.ID, p.ID)
		if err != nil {
			return organizationOut{}, err
		}
		out.Projects = append(out.Projects, projectOut(p, keys))
	}
	return out, nil
}

func adminUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: glassbox-api admin [--config FILE] [--dsn DSN] COMMAND [flags]")
	fmt.Fprintf(w, "secrets come from the environment or standard input: %s (a DSN with a password), %s or --secret-key-stdin\n",
		DSNEnv, SecretKeyEnv)
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(adminCommands))
	for name := range adminCommands {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %s %s\n", name, adminCommands[name].usage)
	}
}

// DSNEnv names the variable a control plane DSN with a password may come from.
const DSNEnv = "GLASSBOX_CONTROL_PLANE_DSN"

// admin runs one management command against the control plane store named
// by --dsn, else by DSNEnv, else by the configuration file, and prints its
// result as JSON.
func admin(ctx context.Context, args []string, in adminInput, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("glassbox-api admin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "YAML configuration file whose control_plane.dsn to use")
	dsn := fs.String("dsn", "", "control plane DSN without a password (overrides the configuration file and "+DSNEnv+")")
	fs.Usage = func() {
		adminUsage(stderr)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	cmd, ok := adminCommands[fs.Arg(0)]
	if !ok {
		fs.Usage()
		if fs.NArg() == 0 {
			return errors.New("admin: a command is required")
		}
		return fmt.Errorf("admin: unknown command %q", fs.Arg(0))
	}
	sub := flag.NewFlagSet("glassbox-api admin "+fs.Arg(0), flag.ContinueOnError)
	sub.SetOutput(stderr)
	exec := cmd.flags(sub, in)
	if err := sub.Parse(fs.Args()[1:]); err != nil {
		return err
	}
	if sub.NArg() > 0 {
		return fmt.Errorf("admin %s: unexpected argument %q", fs.Arg(0), sub.Arg(0))
	}
	if u, err := url.Parse(*dsn); err == nil && u.User != nil {
		if _, hasPassword := u.User.Password(); hasPassword {
			return fmt.Errorf("admin: --dsn holds a password, which others can read from the command line; pass it in %s or the configuration file", DSNEnv)
		}
	}
	if *dsn == "" {
		*dsn = in.getenv(DSNEnv)
	}
	if *dsn == "" {
		cfg, err := loadConfig(*configPath)
		if err != nil {
			return err
		}
		*dsn = cfg.ControlPlane.DSN
	}
	store, err := controlplane.Open(ctx, *dsn)
	if err != nil {
		return err
	}
	result, err := exec(ctx, store)
	if err != nil {
		return errors.Join(fmt.Errorf("admin %s: %w", fs.Arg(0), err), store.Close())
	}
	if err := store.Close(); err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(result)
}
