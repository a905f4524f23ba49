import type { AccountDeps } from './deps.ts';
import { OwnAccount } from './own-account.ts';
import { PasswordResets } from './password-reset.ts';
import { PortalLinks } from './portal-links.ts';
import { SignIn } from './sign-in.ts';
import { Team } from './team.ts';

/** The account services, built once per process (context.ts). */
export interface Accounts {
  signIn: SignIn;
  links: PortalLinks;
  team: Team;
  own: OwnAccount;
  resets: PasswordResets;
  deps: AccountDeps;
}

export function createAccounts(deps: AccountDeps): Accounts {
  return {
    signIn: new SignIn(deps),
    links: new PortalLinks(deps),
    team: new Team(deps),
    own: new OwnAccount(deps),
    resets: new PasswordResets(deps),
    deps,
  };
}
