/** A user created at launch: `name:password:role[,role...]` on the CLI. */
export interface UserSpec {
  user: string;
  password: string;
  /** Built-in role names, granted on `admin` (e.g. root, readWriteAnyDatabase, restore). */
  roles: string[];
}

/** Users, their SCRAM credentials and roles. (Owned by the auth work; stub.) */
export class UserRegistry {
  constructor(readonly specs: UserSpec[]) {}

  get enabled(): boolean {
    return this.specs.length > 0;
  }
}
