// `token`: the access token of the service this environment signs in as (TEMPORAL_OIDC_*, sign-on), for
// the tools that take one: `temporal ... --api-key "$(docs-admin token)"`. It lives as long as the provider
// says (15 minutes by default); the CLI and the worker fetch their own and refresh them.
import { Command } from 'commander';
import { InvalidInputError } from '../../client/errors';
import { OIDC_ENV, fetchServiceToken, serviceTokenSettingsFromEnv } from '../../connection';
import type { CliContext } from '../context';

export function tokenCommand({ io, wire }: CliContext): Command {
  return wire(new Command('token'))
    .description(`Print an access token of the service ${OIDC_ENV.clientId} names (sign-on), for temporal --api-key.`)
    .action(async () => {
      const settings = serviceTokenSettingsFromEnv(io.env);
      if (!settings)
        throw new InvalidInputError([
          `set ${OIDC_ENV.issuer}, ${OIDC_ENV.clientId} and ${OIDC_ENV.clientSecretFile} (npm run cluster -- --sso prints them)`,
        ]);
      io.stdout.write(`${await fetchServiceToken(settings)}\n`);
    });
}
