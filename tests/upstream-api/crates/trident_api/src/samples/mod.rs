pub mod sample_hc;
