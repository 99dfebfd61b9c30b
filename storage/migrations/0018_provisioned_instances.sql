-- Instances that pools' providers launched (elastic agents). A row is written before its launch
-- command runs, so that a master killed during a scale-up finds, after its restart, every
-- instance it may have started; rows stay after the instance ends, for det provisioner list.
CREATE TABLE provisioned_instances (
  id            text PRIMARY KEY,
  resource_pool text NOT NULL,
  provider      text NOT NULL,
  state         text NOT NULL,
  launch_time   timestamptz NOT NULL DEFAULT now(),
  end_time      timestamptz,
  end_reason    text NOT NULL DEFAULT ''
);
CREATE INDEX provisioned_instances_live ON provisioned_instances (resource_pool) WHERE end_time IS NULL;
