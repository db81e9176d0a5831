"""Stand-in for jax._src.distributed: ``global_state``, as JAX's ``State`` (its ``client`` is set
once ``initialize`` has connected, and cleared by ``shutdown``)."""


class State:
    process_id = 0
    num_processes = 1
    service = None
    client = None
    coordinator_address = None

    def initialize(self, coordinator_address, num_processes, process_id):
        self.coordinator_address = coordinator_address
        self.process_id = process_id
        self.num_processes = num_processes
        self.client = object()  # JAX's DistributedRuntimeClient

    def shutdown(self):
        self.client = None


global_state = State()
