// Placeholder until the policy core lands.
