import torch
a = torch.randn(64, 2048, dtype=torch.bfloat16, device="cuda")
b = torch.randn(768, 2048, dtype=torch.bfloat16, device="cuda")
a32 = torch.randn(32, 2048, dtype=torch.bfloat16, device="cuda")
for i in range(3):
    c = a @ b.t()
    c2 = a32 @ b.t()
torch.cuda.synchronize()
