// An edge (--role edge) serves the pre-bid port and /metrics (on --metrics-port, as every
// role does); no account API, dashboard or reporting listener. Provisioning commands are
// refused with a pointer to the full instance.

export const EDGE_PROVISIONING_REFUSAL =
  'this ivtd is a fleet edge (--role edge): customers, users and keys are managed on the full instance (--role all) and reach the edges through ClickHouse';
