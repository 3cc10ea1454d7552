// Versioned schema migrations, applied in order inside one transaction each.
// Never edit a released migration: add a new one with the next version.

export interface Migration {
  version: number;
  name: string;
  statements: string[];
}

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'customers, users and keys',
    statements: [
      `CREATE TABLE customers (
         customer_id VARCHAR PRIMARY KEY,
         partner_id  VARCHAR NOT NULL UNIQUE,
         name        VARCHAR NOT NULL,
         created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp
       )`,
      `CREATE TABLE users (
         user_id       VARCHAR PRIMARY KEY,
         customer_id   VARCHAR NOT NULL REFERENCES customers(customer_id),
         username      VARCHAR NOT NULL UNIQUE,
         password_hash VARCHAR NOT NULL,
         disabled      BOOLEAN NOT NULL DEFAULT false,
         created_at    TIMESTAMP NOT NULL DEFAULT current_timestamp,
         updated_at    TIMESTAMP NOT NULL DEFAULT current_timestamp
       )`,
      // kind: 'prebid' | 'reporting'. key_hash = sha256 hex of the secret (keys are 192-bit random).
      // expires_at NULL = current key; set to now + grace when rotated out.
      `CREATE TABLE api_keys (
         key_id      VARCHAR PRIMARY KEY,
         customer_id VARCHAR NOT NULL REFERENCES customers(customer_id),
         kind        VARCHAR NOT NULL CHECK (kind IN ('prebid', 'reporting')),
         key_hash    VARCHAR NOT NULL UNIQUE,
         key_prefix  VARCHAR NOT NULL,
         created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp,
         expires_at  TIMESTAMP
       )`,
    ],
  },
];
