"""PyTorch NCCL flight recorder dumps: `POST /v1/flight-recorder`."""
