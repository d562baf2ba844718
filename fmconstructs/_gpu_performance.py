"""What the catalog's GPUs can do: peak dense tensor FLOPS per precision, HBM, and each instance type's EFA generation.

Read these through the catalog (:attr:`fmconstructs.catalog.InstanceSpec.gpu_performance`,
:func:`fmconstructs.catalog.gpu_performance`), never from here: the catalog stays the one source of truth.

Every figure is a vendor peak (what planning tools divide by), never a measured rate. NVIDIA's datasheets print most
tensor-core figures *with 2:4 structured sparsity*, marked with an asterisk ("* With sparsity"; the H100 datasheet
adds "Specifications 1/2 lower without sparsity"): a dense figure below is half the datasheet's figure only where the
datasheet marks it as sparse, and each record says which. FP64 figures carry no asterisk (dense as printed).

Sources as seen (public copies in the search tool's "pages" corpus; NVIDIA's own pages were not reachable as such):

- [NV-H100] NVIDIA H100 Tensor Core GPU datasheet, SXM column, as reproduced at
  archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html: FP64 Tensor Core 67 TFLOPS, TF32 989*, BF16 1,979*,
  FP16 1,979*, FP8 3,958* ("* Shown with sparsity. Specifications 1/2 lower without sparsity"), 80 GB HBM3 at
  3,350 GB/s. Cross-check: glennklockwood.com/garden/processors/h100 (dense "Matrix": TF32 494.7, BF16 989.4,
  FP8 1978.9, FP64 66.9 TFLOPS).
- [NV-H200] NVIDIA H200 datasheet as reproduced at lzwjava.github.io/nvidia-h200-gpu-specs-en: 141 GB HBM3e,
  4.8 TB/s, FP8 3,958 TFLOPS* ("Performance figures include sparsity"), same Hopper compute as H100 SXM.
- [NV-HGX] NVIDIA HGX B200 / GB200 NVL72 per-GPU table as reproduced at zdszero.github.io (Hardware.html):
  HGX B200 GPU FP4 18, FP8 9, BF16 4.5, TF32 2.2 PFLOPS, FP64 37 TFLOPS, 180 GB HBM3E at 7.7 TB/s; GB200 GPU FP4 20,
  FP8 10, BF16 5, TF32 2.5 PFLOPS, FP64 40 TFLOPS, 186 GB HBM3E at 8 TB/s. The HGX table as reproduced at
  fibermall.com/blog/?p=17161 marks FP8/BF16/TF32 "* With sparsity". Cross-check of the dense halves:
  glennklockwood.com/garden/processors/B200 (HGX B200 dense BF16 2250, FP8 4500, FP4 9000 TFLOPS; GB200 variant
  dense BF16 2500, FP8 5000, FP4 10000 TFLOPS).
- [NV-B300] glennklockwood.com/garden/processors/B300 (HGX B300: dense BF16 2250, FP8 4500, TF32 1125 TFLOPS, FP64
  1.25 TFLOPS; sparse FP4 18000 TFLOPS; 288 GB HBM3e, 8 TB/s) and the HGX B300 table at fibermall.com (FP8 72,
  BF16 36, TF32 18 PFLOPS* with sparsity for 8 GPUs; FP64 10 TFLOPS for 8 GPUs).
- [AWS-OVERVIEW] AWS/Hugging Face "Building blocks for foundation model training and inference on AWS" as quoted in
  fmconstructs issue 23 and summarised at summarizeddata.com/aws-foundation-model-building-blocks: H100 0.98 PFLOPS
  dense BF16/FP16 and 1.98 FP8; H200 141 GB HBM3e at 4.8 TB/s; B200/B300 2.25 PFLOPS dense BF16/FP16, up to
  13.5 PFLOPS FP4; B300 288 GB HBM3e at 8 TB/s; EFAv4 on P6 vs EFAv3.
- [AWS-HYPERPOD-GB200] AWS Machine Learning Blog "Train and deploy AI models at trillion-parameter scale with Amazon
  SageMaker HyperPod support for P6e-GB200 UltraServers" (as reproduced at news.fishaiapp.com/news/4622641): 72 GPUs,
  360 PFLOPS FP8 (= 5 PFLOPS per GPU, the dense half of [NV-HGX]'s 10), 13.4 TB HBM3e, "EFA v4".
- [AWS-FACTS] /work/shared/reference/aws-facts.md section 1 (EFA generation per type: P5/P5e v2, P5en v3,
  P6-B200/B300 v4; P6e-GB200 "v3 or v4 (sources disagree)").

HBM capacity per GPU for sizing is the catalog's ``GpuSpec.memory_mib_per_gpu`` (EC2 ``GpuInfo``), not the vendor's
marketing GB printed here as ``hbm_gb``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType


class Precision(str, Enum):
    """Tensor-core number formats a peak FLOPS figure is quoted for."""

    FP64 = "fp64"
    TF32 = "tf32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    FP4 = "fp4"


@dataclass(frozen=True)
class GpuPerformance:
    """Peak dense tensor-core throughput and HBM of one GPU model (per GPU)."""

    model: str
    """``GpuSpec.model`` in the catalog (``H100``, ``H200``, ``B200``, ``B300``, ``GB200``)."""
    dense_tflops: Mapping[Precision, float]
    """Peak DENSE tensor-core TFLOPS per precision (no 2:4 sparsity). A precision the GPU lacks is absent."""
    hbm_gb: float
    """HBM capacity as the vendor states it (decimal GB)."""
    hbm_bandwidth_tbytes_per_s: float
    """Peak HBM bandwidth in TB/s (decimal)."""
    sources: tuple[str, ...]
    """Keys of the sources in this module's docstring."""
    unconfirmed: tuple[Precision | str, ...] = field(default=())
    """Figures that rest on a secondary source only or on sources that disagree (see the record's comment)."""

    def dense_pflops(self, precision: Precision) -> float | None:
        """Peak dense PFLOPS of one GPU at ``precision``; None when the GPU has no tensor path for it."""
        tflops = self.dense_tflops.get(precision)
        return None if tflops is None else tflops / 1000


def _tflops(**values: float) -> Mapping[Precision, float]:
    return MappingProxyType({Precision(name): value for name, value in values.items()})


# Hopper: the datasheet prints TF32/BF16/FP16/FP8 with sparsity (asterisk): dense = half. FP64 Tensor Core as printed.
_HOPPER = _tflops(fp64=67.0, tf32=494.5, bf16=989.5, fp16=989.5, fp8=1979.0)

GPU_PERFORMANCE: Mapping[str, GpuPerformance] = MappingProxyType(
    {
        # [NV-H100] halves of 989*/1,979*/3,958*; [AWS-OVERVIEW] cross-check 0.98 PF BF16, 1.98 PF FP8 dense. No FP4.
        "H100": GpuPerformance("H100", _HOPPER, 80.0, 3.35, ("NV-H100", "AWS-OVERVIEW")),
        # [NV-H200]: the same Hopper compute as H100 SXM (sparse figures identical); 141 GB HBM3e at 4.8 TB/s
        # ([AWS-OVERVIEW] agrees). TF32/BF16/FP64 are carried over from H100 SXM: the H200 datasheet itself was seen
        # only through a copy listing FP8 and FP64 (UNCONFIRMED for TF32/BF16/FP16 on the H200 sheet).
        "H200": GpuPerformance(
            "H200",
            _HOPPER,
            141.0,
            4.8,
            ("NV-H200", "NV-H100", "AWS-OVERVIEW"),
            unconfirmed=(Precision.TF32, Precision.BF16, Precision.FP16),
        ),
        # [NV-HGX] HGX B200 per GPU: FP4 18 PF sparse -> 9 dense; FP8 9* -> 4.5; BF16/FP16 4.5* -> 2.25 ([AWS-OVERVIEW]
        # 2.25 dense agrees); TF32 2.2* -> 1.1 (glennklockwood: 1100 dense); FP64 37 TFLOPS as printed. 180 GB at
        # 7.7 TB/s in the HGX B200 table (glennklockwood gives 8 TB/s for the 192 GB part).
        "B200": GpuPerformance(
            "B200",
            _tflops(fp64=37.0, tf32=1100.0, bf16=2250.0, fp16=2250.0, fp8=4500.0, fp4=9000.0),
            180.0,
            7.7,
            ("NV-HGX", "AWS-OVERVIEW"),
        ),
        # [NV-B300] HGX B300: BF16/FP16 2.25 PF dense ([AWS-OVERVIEW] agrees), FP8 4.5, TF32 1.125, FP64 1.25 TFLOPS.
        # FP4 dense: [AWS-OVERVIEW] "up to 13.5 PFLOPS"; glennklockwood lists 13,125 TFLOPS: the sources disagree,
        # 13.5 is kept (AWS's figure) and marked UNCONFIRMED. 288 GB HBM3e at 8 TB/s ([AWS-OVERVIEW], [NV-B300]).
        "B300": GpuPerformance(
            "B300",
            _tflops(fp64=1.25, tf32=1125.0, bf16=2250.0, fp16=2250.0, fp8=4500.0, fp4=13500.0),
            288.0,
            8.0,
            ("NV-B300", "AWS-OVERVIEW"),
            unconfirmed=(Precision.FP4,),
        ),
        # [NV-HGX] GB200 NVL72 per GPU: FP4 20 PF sparse -> 10 dense; FP8 10* -> 5 ([AWS-HYPERPOD-GB200]: 360 PF FP8
        # over 72 GPUs = 5 agrees); BF16/FP16 5* -> 2.5; TF32 2.5* -> 1.25; FP64 40 TFLOPS as printed. 186 GB at 8 TB/s.
        "GB200": GpuPerformance(
            "GB200",
            _tflops(fp64=40.0, tf32=1250.0, bf16=2500.0, fp16=2500.0, fp8=5000.0, fp4=10000.0),
            186.0,
            8.0,
            ("NV-HGX", "AWS-HYPERPOD-GB200"),
        ),
    }
)

EFA_GENERATION: Mapping[str, int] = MappingProxyType(
    {
        "p5.48xlarge": 2,  # [AWS-FACTS]: EFA v2 (Nitro v4)
        "p5e.48xlarge": 2,  # [AWS-FACTS]: v2
        "p5en.48xlarge": 3,  # [AWS-FACTS]: v3 (Nitro v5); [AWS-OVERVIEW] "EFAv4 on P6 vs EFAv3"
        "p6-b200.48xlarge": 4,  # [AWS-FACTS]: v4 (Nitro v6); [AWS-OVERVIEW]: EFAv4 on P6
        "p6-b300.48xlarge": 4,  # [AWS-FACTS]: v4; [AWS-OVERVIEW]: EFAv4 on P6
        # [AWS-HYPERPOD-GB200] "EFA v4"; [AWS-FACTS] records that another source says v3 (UNCONFIRMED).
        "p6e-gb200.36xlarge": 4,
    }
)
EFA_GENERATION_UNCONFIRMED: frozenset[str] = frozenset({"p6e-gb200.36xlarge"})
"""Types whose EFA generation rests on sources that disagree."""
