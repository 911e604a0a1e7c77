import statistics as st

data = [12, 15, 11, 19, 22, 15, 14, 30, 15, 13]
print(st.mean(data), st.median(data), st.mode(data))
print(round(st.pstdev(data), 3), st.quantiles(data, n=4))
q1, _, q3 = st.quantiles(data, n=4)
iqr = q3 - q1
print("outliers:", [x for x in data if x > q3 + 1.5 * iqr or x < q1 - 1.5 * iqr])
